/**
 * `npm run bench:blobs`: a 64 MiB blob uploaded and downloaded through a real server process,
 * proxied (the server carries the bytes) and direct (presigned URLs: the client talks to the
 * bucket), on the filesystem and on S3 (s3rver on loopback, in this process, so its CPU is not the
 * server's). Per mode: MiB/s, and the server process's CPU per MiB from /proc (user + system).
 * BENCH_ROUNDS rounds (default 3), fresh bytes each round (no merge); medians are printed.
 * The server on S3 with SVC_S3_DIRECT=false carries proxied downloads; direct uploads finalize
 * with a streamed hash there (s3rver keeps no SHA-256 checksum), which S3 itself would spare.
 */
import { createHash, randomFillSync } from 'node:crypto';
import { S3RVER_KEY, startTestS3 } from '@strongroom/adapters-node/testing';
import { cpuMicros, median, startServer, VERSION } from './lib.js';
import { uploaderAccount } from './uploads.js';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_BLOB_MIB ?? 64) * MiB;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

type Mode = 'proxied' | 'direct';
interface Figures {
  upMiBs: number[];
  upCpuMsPerMiB: number[];
  downMiBs: number[];
  downCpuMsPerMiB: number[];
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
const common = { SVC_QUOTA_HARD_BYTES: String(1024 * 1024 * MiB), SVC_QUOTA_SOFT_BYTES: String(1024 * 1024 * MiB) };
const servers = {
  filesystem: await startServer(4801, common),
  's3 proxied': await startServer(4802, { ...common, ...s3Env('proxied', false) }),
  's3 direct': await startServer(4803, { ...common, ...s3Env('direct', true) }),
};
const runs: [keyof typeof servers, Mode][] = [
  ['filesystem', 'proxied'],
  ['s3 proxied', 'proxied'],
  ['s3 direct', 'direct'],
];

async function json(r: Response): Promise<Record<string, unknown>> {
  if (r.status >= 300) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Record<string, unknown>;
}

try {
  const results: Record<string, Figures> = {};
  for (const [name, mode] of runs) {
    const server = servers[name];
    const { token } = await uploaderAccount(server.url, `bench-blobs-${name.replace(' ', '-')}-${Date.now()}`);
    const headers = { 'x-svc-protocol': VERSION, authorization: `Bearer ${token}` };
    const f: Figures = { upMiBs: [], upCpuMsPerMiB: [], downMiBs: [], downCpuMsPerMiB: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const bytes = randomFillSync(new Uint8Array(SIZE));
      const hash = sha(bytes);
      // Upload: open, send (to the bucket or to the server), finalize; timed and CPU-counted as one.
      let cpu = cpuMicros(server.pid);
      let started = performance.now();
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
      let seconds = (performance.now() - started) / 1000;
      let after = cpuMicros(server.pid);
      f.upMiBs.push(SIZE / MiB / seconds);
      if (cpu !== null && after !== null) f.upCpuMsPerMiB.push((after - cpu) / 1000 / (SIZE / MiB));

      // Download: the server's answer, and the redirect's target when there is one.
      cpu = cpuMicros(server.pid);
      started = performance.now();
      let got = await fetch(`${server.url}/v1/blobs/${hash}`, { headers, redirect: 'manual' });
      if (got.status === 307) got = await fetch(got.headers.get('location')!);
      if (got.status !== 200) throw new Error(`${name}: download ${got.status}`);
      const back = new Uint8Array(await got.arrayBuffer());
      seconds = (performance.now() - started) / 1000;
      after = cpuMicros(server.pid);
      if (back.length !== SIZE || sha(back) !== hash) throw new Error(`${name}: downloaded bytes differ`);
      f.downMiBs.push(SIZE / MiB / seconds);
      if (cpu !== null && after !== null) f.downCpuMsPerMiB.push((after - cpu) / 1000 / (SIZE / MiB));
    }
    results[`${name} (${mode})`] = f;
  }
  console.log(
    `${SIZE / MiB} MiB blob, ${ROUNDS} rounds, medians (server CPU = the server process's user + system time, from /proc)`,
  );
  const fmt = (xs: number[]) => (xs.length === 0 ? 'n/a' : median(xs).toFixed(1));
  for (const [label, f] of Object.entries(results)) {
    console.log(
      `${label.padEnd(22)} upload ${fmt(f.upMiBs).padStart(7)} MiB/s, server CPU ${fmt(f.upCpuMsPerMiB).padStart(6)} ms/MiB | ` +
        `download ${fmt(f.downMiBs).padStart(7)} MiB/s, server CPU ${fmt(f.downCpuMsPerMiB).padStart(6)} ms/MiB`,
    );
  }
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  await s3.stop();
}
