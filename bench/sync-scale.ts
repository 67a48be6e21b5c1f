/**
 * The sync mode (`npm run bench -- --sync`): library sync at scale beside its floor, in the same
 * rounds. The store is seeded (growth.ts) with one account holding BENCH_SYNC_SCALE_ASSETS live
 * assets (default 100,000, each with its blob and its change) and a change log of
 * BENCH_SYNC_SCALE_ENTRIES entries across the store (default 1,000,000, the account's included;
 * the rest are other accounts' removals), then a new server process starts on it.
 *
 * Two workloads, each measured on the server and on the floor (sync-floor-server.ts: one statement
 * per page over the same database, bare node:http, no authentication) one right after the other
 * in every round:
 * - from scratch: every page of the account in turn, 500 a page, from no cursor to the last
 *   (each client of the load walks the whole library, as a new device does);
 * - from a recent cursor: the page after a cursor the last page of 500 changes has not reached
 *   (a device 500 changes behind).
 * Figures: pages/s (median over rounds), the ratio server ÷ floor per round (median and spread),
 * and each process's CPU per page (the database backends' too on PostgreSQL).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { prepareGrowth, type SeedCounts } from './growth.js';
import {
  api,
  backendCpu,
  backendDelta,
  cpuMicros,
  measure,
  median,
  PASSWORD,
  setLaunchPrefix,
  startScript,
  startServer,
  VERSION,
  type Load,
} from './lib.js';

export interface SyncScaleFigures {
  lines: string[];
  json: Record<string, unknown>;
}

const PAGE = 500;
const positive = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};

export function syncScaleCounts(): SeedCounts {
  const assets = positive('BENCH_SYNC_SCALE_ASSETS', 100_000);
  const entries = positive('BENCH_SYNC_SCALE_ENTRIES', 1_000_000);
  if (entries <= assets) throw new Error('BENCH_SYNC_SCALE_ENTRIES must exceed BENCH_SYNC_SCALE_ASSETS');
  // Accounts, sessions and finished uploads only as many as the seeding needs to be a store: the
  // growth mode grows those; this mode grows the log.
  return { accounts: 10_000, sessions: 10_000, uploads: 1_000, assets, syncEntries: entries - assets };
}

interface Side {
  name: string;
  pid: number;
  load: Load;
  rps: number[];
  cpu: number[];
  dbCpu: number[];
}

/**
 * With BENCH_SYNC_PROFILE set to a directory, the measured server and floor start with --cpu-prof
 * (the server's profile in DIR/server, the floor's in DIR/floor, written when each stops), behind
 * the same pinning: where a page's time goes on each side, under the same load.
 */
function profiled<T>(side: 'server' | 'floor', start: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_SYNC_PROFILE;
  if (!dir) return start();
  const out = join(dir, side);
  mkdirSync(out, { recursive: true });
  // Node refuses --cpu-prof in NODE_OPTIONS: a launcher puts it right after the node binary.
  const launcher = join(dir, `node-${side}.sh`);
  writeFileSync(launcher, `#!/bin/sh\nnode="$1"; shift\nexec "$node" --cpu-prof --cpu-prof-dir=${out} "$@"\n`);
  chmodSync(launcher, 0o755);
  const before = setLaunchPrefix([]);
  setLaunchPrefix([...before, launcher]);
  return start().finally(() => setLaunchPrefix(before));
}

/** Walks every page with `next` (the cursor after a page, or null at the end); returns the cursors each page starts from. */
async function walk(first: (cursor: string | null) => Promise<{ cursor: string; more: boolean; count: number }>) {
  const starts: (string | null)[] = [null];
  let total = 0;
  for (;;) {
    const page = await first(starts.at(-1)!);
    total += page.count;
    if (!page.more) return { starts, total };
    starts.push(page.cursor);
  }
}

export async function runSyncScale(
  store: { name: string; env: Record<string, string>; pgUrl?: string | undefined },
  bareUrl: string,
  opts: { seconds: number; rounds: number; port: number; floorPort: number; only?: string | null },
): Promise<SyncScaleFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'strongroom-bench-sync-'));
  let server = await startServer(opts.port, store.env, dataDir);
  let floor: Awaited<ReturnType<typeof startScript>> | null = null;
  const db = store.pgUrl ? new pg.Client({ connectionString: store.pgUrl }) : null;
  try {
    const counts = syncScaleCounts();
    const grown = await prepareGrowth(server.url, { dataDir, pgUrl: store.pgUrl }, counts);
    // A new process on the seeded store: no statement plan or cache from before the seeding.
    await server.stop();
    server = await profiled('server', () => startServer(opts.port, store.env, dataDir));
    const signIn = await api(server.url, 'POST', '/v1/auth/login', { address: grown.hotAddress, password: PASSWORD });
    if (signIn.status !== 200) throw new Error(`sign-in: ${signIn.status}`);
    const headers = { authorization: `Bearer ${signIn.body.access_token as string}`, 'x-svc-protocol': VERSION };
    const ourPath = (cursor: string | null) =>
      `/v1/sync?limit=${PAGE}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const ours = await walk(async (cursor) => {
      const r = await api(server.url, 'GET', ourPath(cursor), undefined, signIn.body.access_token);
      if (r.status !== 200) throw new Error(`sync: ${r.status} ${JSON.stringify(r.body)}`);
      return { cursor: r.body.cursor, more: r.body.has_more, count: r.body.changes.length };
    });
    floor = await profiled('floor', () =>
      startScript(
        'bench/sync-floor-server.ts',
        opts.floorPort,
        '/',
        store.pgUrl ? { SYNC_FLOOR_PG_URL: store.pgUrl } : { SYNC_FLOOR_DB: join(dataDir, 'strongroom.db') },
      ),
    );
    const floorPath = (after: string | null) =>
      `/floor/sync?account=${grown.hotAccountId}&after=${after ?? 0}&limit=${PAGE}`;
    const floorUrl = floor.url;
    const floorWalk = await walk(async (after) => {
      const r = await fetch(`${floorUrl}${floorPath(after)}`);
      const b = (await r.json()) as { cursor: string; has_more: boolean; changes: unknown[] };
      return { cursor: b.cursor, more: b.has_more, count: b.changes.length };
    });
    if (
      ours.total !== counts.assets ||
      floorWalk.total !== counts.assets ||
      ours.starts.length !== floorWalk.starts.length
    )
      throw new Error(
        `the walks differ: ours ${ours.total} changes in ${ours.starts.length} pages, the floor's ${floorWalk.total} in ${floorWalk.starts.length}`,
      );
    // The floor answers what the server answers, cursor aside: the same columns, the same body.
    const sample = async (path: string, base: string, h: Record<string, string> = {}) =>
      JSON.stringify(((await (await fetch(`${base}${path}`, { headers: h })).json()) as { changes: unknown }).changes);
    const recent = ours.starts.length - 1;
    if (
      (await sample(ourPath(ours.starts[recent]!), server.url, headers)) !==
      (await sample(floorPath(floorWalk.starts[recent]!), floorUrl))
    )
      throw new Error('the floor and the server answer different changes for the same page');

    const get = (path: string) => ({ method: 'GET', path, headers });
    const sides: Side[] = [];
    const add = (name: string, pid: number, load: Load) => sides.push({ name, pid, load, rps: [], cpu: [], dbCpu: [] });
    add('from scratch: floor', floor.pid, {
      url: floorUrl,
      requests: floorWalk.starts.map((a) => ({ method: 'GET', path: floorPath(a) })),
    });
    add('from scratch: server', server.pid, {
      url: server.url,
      requests: ours.starts.map((c) => get(ourPath(c))),
    });
    add('recent cursor: floor', floor.pid, { url: `${floorUrl}${floorPath(floorWalk.starts[recent]!)}` });
    add('recent cursor: server', server.pid, { url: `${server.url}${ourPath(ours.starts[recent]!)}`, headers });
    // --only WORDS: the workloads whose name holds them ("scratch", "cursor"), floor and server alike.
    if (opts.only) sides.splice(0, sides.length, ...sides.filter((s) => s.name.includes(opts.only!.toLowerCase())));
    if (sides.length === 0) throw new Error(`--only ${opts.only}: no sync workload matches`);
    await db?.connect();
    for (const s of sides) await measure({ ...s.load, seconds: 2 });
    const bare: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      bare.push((await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds })).rps);
      for (const s of sides) {
        const before = cpuMicros(s.pid);
        const dbBefore = db ? await backendCpu(db) : null;
        const f = await measure({ ...s.load, seconds: opts.seconds });
        const after = cpuMicros(s.pid);
        const dbAfter = db ? await backendCpu(db) : null;
        if (f.non2xx > 0 || f.errors > 0) throw new Error(`${s.name}: ${f.non2xx} non-2xx, ${f.errors} errors`);
        s.rps.push(f.rps);
        if (before !== null && after !== null && f.ok > 0) s.cpu.push((after - before) / f.ok);
        if (dbBefore && dbAfter && f.ok > 0) s.dbCpu.push(backendDelta(dbBefore, dbAfter) / f.ok);
      }
    }
    const rows = (['from scratch', 'recent cursor'] as const)
      .filter((workload) => sides.some((s) => s.name.startsWith(workload)))
      .map((workload) => {
        const f = sides.find((s) => s.name === `${workload}: floor`)!;
        const s = sides.find((x) => x.name === `${workload}: server`)!;
        const ratios = s.rps.map((r, i) => r / f.rps[i]!);
        return {
          workload,
          floor: { pages_per_s: median(f.rps), cpu_us: median(f.cpu), db_cpu_us: db ? median(f.dbCpu) : null },
          server: { pages_per_s: median(s.rps), cpu_us: median(s.cpu), db_cpu_us: db ? median(s.dbCpu) : null },
          ratio: median(ratios),
          spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
        };
      });
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const ms = (us: number | null) => (us === null ? '–' : `${(us / 1000).toFixed(2)} ms`);
    const cpu = (x: { cpu_us: number; db_cpu_us: number | null }) =>
      db ? `${ms(x.cpu_us)} + ${ms(x.db_cpu_us)}` : ms(x.cpu_us);
    const lines = [
      `${store.name}: ${grown.summary}; ${ours.starts.length} pages of ${PAGE}. ${opts.rounds} rounds of ${opts.seconds} s, the floor then the server in each; bare route ${Math.round(median(bare))} req/s`,
      '',
      `| workload | floor pages/s | server pages/s | server ÷ floor (spread) | floor CPU/page${db ? ' (+ database)' : ''} | server CPU/page${db ? ' (+ database)' : ''} |`,
      '|---|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.workload} | ${Math.round(r.floor.pages_per_s)} | ${Math.round(r.server.pages_per_s)} | ${pct(r.ratio)} (${pct(r.spread.min)}-${pct(r.spread.max)})${r.ratio < 0.8 ? ' below 80 %' : ''} | ${cpu(r.floor)} | ${cpu(r.server)} |`,
      ),
    ];
    return { lines, json: { store: store.name, pages: ours.starts.length, counts, rows } };
  } finally {
    await db?.end().catch(() => {});
    await floor?.stop();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
