/**
 * `npm run bench:blobs`: a blob (BENCH_BLOB_MIB, default 64 MiB) uploaded and downloaded through a
 * real server process, proxied (the server carries the bytes) and direct (presigned URLs: the
 * client talks to the bucket), on the filesystem and on S3 (s3rver on loopback, in this process,
 * so its CPU is not the server's), beside the floor (blob-floor-server.ts: a bare node:http server
 * that streams the body to a file while hashing it, fsyncs it, and streams a file back). The
 * server on S3 is also set beside the same bare server doing the least an S3-backed server can:
 * one streamed PutObject while hashing, one GetObject streamed back ("S3 floor"): the file floor
 * says what the machine allows, the S3 floor what the object store's own round trips leave.
 *
 * Per mode: MiB/s, and the server process's CPU per MiB from /proc (user + system). Each round
 * moves fresh bytes (no merge) through the floor and through the server back to back, in turns
 * (the floor first in even rounds, the server first in odd ones), so a drift of the machine's
 * speed touches both sides of a pair alike; the ratios (server ÷ floor) are medians of the
 * rounds' own ratios. BENCH_ROUNDS rounds (default 5); BENCH_BLOB_STORES picks stores by name
 * (comma separated: filesystem, s3 proxied, s3 direct). The server on S3 with SVC_S3_DIRECT=false
 * carries proxied downloads; direct uploads finalize with a streamed hash there (s3rver keeps no
 * SHA-256 checksum), which S3 itself would spare.
 */
import { createHash, randomFillSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3RVER_KEY, startTestS3 } from '@strongroom/adapters-node/testing';
import { cpuMicros, median, startScript, startServer, VERSION } from './lib.js';
import { uploaderAccount } from './uploads.js';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_BLOB_MIB ?? 64) * MiB;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

type Mode = 'proxied' | 'direct';
/** One transfer: how fast, and the CPU its server process spent per MiB (null without /proc). */
interface Moved {
  mibS: number;
  cpuMsPerMiB: number | null;
}
interface Round {
  up: Moved;
  down: Moved;
  floorUp: Moved | null;
  floorDown: Moved | null;
  s3FloorUp: Moved | null;
  s3FloorDown: Moved | null;
}

const s3 = await startTestS3('bench');
const awsEnv = { AWS_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey };
const s3Env = (prefix: string, direct: boolean) => ({
  ...awsEnv,
  SVC_BLOB_URL: `s3://${s3.bucket}/${prefix}`,
  SVC_S3_ENDPOINT: s3.endpoint,
  SVC_S3_FORCE_PATH_STYLE: 'true',
  SVC_S3_DIRECT: String(direct),
});
// The bench's connection to the server idles while the floor's side of a round runs: kept open
// past that (the defaults close it after 5 s, racing the next request on a loaded machine).
const common = {
  SVC_QUOTA_HARD_BYTES: String(1024 * 1024 * MiB),
  SVC_QUOTA_SOFT_BYTES: String(1024 * 1024 * MiB),
  SVC_KEEPALIVE_TIMEOUT_S: '600',
  SVC_IDLE_TIMEOUT_S: '600',
};
const picked = process.env.BENCH_BLOB_STORES?.split(',').map((s) => s.trim());
/** The first of the four loopback ports the run takes (BENCH_BLOB_PORT): two runs on one machine must not share them. */
const PORT = Number(process.env.BENCH_BLOB_PORT ?? 4801);
const runs: [string, Mode, number, Record<string, string>][] = (
  [
    ['filesystem', 'proxied', PORT, common],
    ['s3 proxied', 'proxied', PORT + 1, { ...common, ...s3Env('proxied', false) }],
    ['s3 direct', 'direct', PORT + 2, { ...common, ...s3Env('direct', true) }],
  ] as [string, Mode, number, Record<string, string>][]
).filter(([name]) => picked === undefined || picked.includes(name));

const floorDir = mkdtempSync(join(tmpdir(), 'strongroom-blob-floor-'));
const floor = await startScript('bench/blob-floor-server.ts', PORT + 3, '/floor/ready', {
  ...awsEnv,
  FLOOR_DIR: floorDir,
  FLOOR_S3_ENDPOINT: s3.endpoint,
  FLOOR_S3_BUCKET: s3.bucket,
});
const servers: Awaited<ReturnType<typeof startServer>>[] = [];

async function json(r: Response): Promise<Record<string, unknown>> {
  if (r.status >= 300) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Record<string, unknown>;
}

/** Times `work` and reads `pid`'s CPU around it. */
async function moved(pid: number, work: () => Promise<void>): Promise<Moved> {
  const cpu = cpuMicros(pid);
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const after = cpuMicros(pid);
  return {
    mibS: SIZE / MiB / seconds,
    cpuMsPerMiB: cpu !== null && after !== null ? (after - cpu) / 1000 / (SIZE / MiB) : null,
  };
}

/** Down the floor's PUT and GET of `bytes`, to a file (`blob`) or to the bucket (`s3`). */
async function throughFloor(
  bytes: Uint8Array<ArrayBuffer>,
  hash: string,
  to: 'blob' | 's3',
): Promise<{ up: Moved; down: Moved }> {
  const name = hash.slice(0, 16);
  const up = await moved(floor.pid, async () => {
    const r = await json(await fetch(`${floor.url}/floor/${to}/${name}`, { method: 'PUT', body: bytes }));
    if (r.sha256 !== hash) throw new Error('floor: hashed other bytes');
  });
  const down = await moved(floor.pid, async () => {
    const back = new Uint8Array(await (await fetch(`${floor.url}/floor/${to}/${name}`)).arrayBuffer());
    if (back.length !== SIZE) throw new Error('floor: downloaded bytes differ');
  });
  rmSync(join(floorDir, name), { force: true });
  return { up, down };
}

try {
  const results: Record<string, Round[]> = {};
  for (const [name, mode, port, env] of runs) {
    const server = await startServer(port, env);
    servers.push(server);
    const { token } = await uploaderAccount(server.url, `bench-blobs-${name.replace(' ', '-')}-${Date.now()}`);
    const headers = { 'x-svc-protocol': VERSION, authorization: `Bearer ${token}` };
    const rounds: Round[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const bytes = randomFillSync(new Uint8Array(SIZE));
      const hash = sha(bytes);
      const throughServer = async (): Promise<{ up: Moved; down: Moved }> => {
        // Upload: open, send (to the bucket or to the server), finalize; timed and CPU-counted as one.
        const up = await moved(server.pid, async () => {
          const opened = await json(
            await fetch(`${server.url}/upload`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              body: JSON.stringify({ declared_size: SIZE, kind: 'original', device_id: 'bench', content_hash: hash }),
            }),
          );
          const direct = opened.direct_put as { url: string; headers: Record<string, string> } | null;
          if ((mode === 'direct') !== (direct !== null))
            throw new Error(`${name}: direct_put ${direct === null ? 'absent' : 'offered'}`);
          const sent =
            mode === 'direct'
              ? await fetch(direct!.url, { method: 'PUT', headers: direct!.headers, body: bytes })
              : await fetch(`${server.url}/upload/${opened.upload_id as string}`, {
                  method: 'PUT',
                  headers: { ...headers, 'content-type': 'application/octet-stream' },
                  body: bytes,
                });
          if (sent.status >= 300) throw new Error(`${name}: send ${sent.status} ${await sent.text()}`);
          await sent.arrayBuffer();
          await json(
            await fetch(`${server.url}/upload/${opened.upload_id as string}/finalize`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              body: JSON.stringify({ content_hash: hash }),
            }),
          );
        });
        // Download: the server's answer, and the redirect's target when there is one.
        let back: Uint8Array = new Uint8Array(0);
        const down = await moved(server.pid, async () => {
          let got = await fetch(`${server.url}/v1/blobs/${hash}`, { headers, redirect: 'manual' });
          if (got.status === 307) got = await fetch(got.headers.get('location')!);
          if (got.status !== 200) throw new Error(`${name}: download ${got.status}`);
          back = new Uint8Array(await got.arrayBuffer());
        });
        if (back.length !== SIZE || sha(back) !== hash) throw new Error(`${name}: downloaded bytes differ`);
        return { up, down };
      };
      // The floor only beside proxied transfers: a direct one does not pass through a server.
      let theirs: { up: Moved; down: Moved } | null = null;
      let bucket: { up: Moved; down: Moved } | null = null;
      const floors = async () => {
        if (mode !== 'proxied') return;
        theirs = await throughFloor(bytes, hash, 'blob');
        if (name === 's3 proxied') bucket = await throughFloor(bytes, hash, 's3');
      };
      if (round % 2 === 0) await floors();
      const ours = await throughServer();
      if (round % 2 === 1) await floors();
      const t = theirs as { up: Moved; down: Moved } | null;
      const b = bucket as { up: Moved; down: Moved } | null;
      rounds.push({
        up: ours.up,
        down: ours.down,
        floorUp: t?.up ?? null,
        floorDown: t?.down ?? null,
        s3FloorUp: b?.up ?? null,
        s3FloorDown: b?.down ?? null,
      });
    }
    results[`${name} (${mode})`] = rounds;
    await server.stop();
  }

  console.log(
    `${SIZE / MiB} MiB blob, ${ROUNDS} paired rounds, medians (server CPU = the server process's user + system time, from /proc; ratios are medians of each round's server ÷ floor)`,
  );
  const fmt = (xs: (number | null)[], digits = 1) => {
    const ys = xs.filter((x): x is number => x !== null);
    return ys.length === 0 ? 'n/a' : median(ys).toFixed(digits);
  };
  const ratio = (rounds: Round[], of: (r: Round) => [number | null, number | null]) =>
    fmt(
      rounds.map((r) => {
        const [server, floor] = of(r);
        return server === null || floor === null ? null : server / floor;
      }),
      2,
    );
  for (const [label, rounds] of Object.entries(results)) {
    for (const [dir, key, floorKey, s3FloorKey] of [
      ['upload', 'up', 'floorUp', 's3FloorUp'],
      ['download', 'down', 'floorDown', 's3FloorDown'],
    ] as const) {
      const ours = rounds.map((r) => r[key]);
      const theirs = rounds.map((r) => r[floorKey]);
      const line =
        `${label.padEnd(22)} ${dir.padEnd(8)} ${fmt(ours.map((m) => m.mibS)).padStart(7)} MiB/s, ` +
        `server CPU ${fmt(
          ours.map((m) => m.cpuMsPerMiB),
          2,
        ).padStart(6)} ms/MiB`;
      if (theirs.every((m) => m === null)) {
        console.log(line);
        continue;
      }
      console.log(
        `${line} | floor ${fmt(theirs.map((m) => m?.mibS ?? null)).padStart(7)} MiB/s, ` +
          `CPU ${fmt(
            theirs.map((m) => m?.cpuMsPerMiB ?? null),
            2,
          ).padStart(6)} ms/MiB | ` +
          `server ÷ floor: speed ${ratio(rounds, (r) => [r[key].mibS, r[floorKey]?.mibS ?? null])}, ` +
          `CPU per MiB ${ratio(rounds, (r) => [r[key].cpuMsPerMiB, r[floorKey]?.cpuMsPerMiB ?? null])}`,
      );
      const bucket = rounds.map((r) => r[s3FloorKey]);
      if (bucket.every((m) => m === null)) continue;
      console.log(
        `${''.padEnd(31)} S3 floor ${fmt(bucket.map((m) => m?.mibS ?? null)).padStart(7)} MiB/s, ` +
          `CPU ${fmt(
            bucket.map((m) => m?.cpuMsPerMiB ?? null),
            2,
          ).padStart(6)} ms/MiB | ` +
          `server ÷ S3 floor: speed ${ratio(rounds, (r) => [r[key].mibS, r[s3FloorKey]?.mibS ?? null])}, ` +
          `CPU per MiB ${ratio(rounds, (r) => [r[key].cpuMsPerMiB, r[s3FloorKey]?.cpuMsPerMiB ?? null])}`,
      );
    }
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await floor.stop();
  rmSync(floorDir, { recursive: true, force: true });
  await s3.stop();
}
