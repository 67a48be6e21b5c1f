/**
 * The sync mode (`npm run bench -- --sync`): library sync at scale beside its floor, in the same
 * rounds. The store is seeded (growth.ts) with one account holding BENCH_SYNC_SCALE_ASSETS live
 * assets (default 100,000, each with its blob and its change) and BENCH_SYNC_SCALE_STORE assets
 * across the store (default 1,000,000, the account's included: the rest are 10,000 other accounts'
 * live assets, each with its blob and its change), then a new server process starts on it.
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
 *
 * With --growth, a fresh store (the same account and library, nothing else) runs beside the grown
 * one, each with its own server and floor, in the same rounds (the stores' order alternating from
 * round to round). The verdict is per round and workload the grown store's server ÷ floor over the
 * fresh store's: a ratio of ratios, which the machine's load moves far less than either store's
 * pages per second measured apart. The floors' own grown ÷ fresh is printed beside it: what growth
 * costs the database's one range read, which no server can avoid.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';
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
  const store = positive('BENCH_SYNC_SCALE_STORE', 1_000_000);
  if (store <= assets) throw new Error('BENCH_SYNC_SCALE_STORE must exceed BENCH_SYNC_SCALE_ASSETS');
  // Accounts, sessions and finished uploads only as many as the seeding needs to be a store: the
  // growth mode grows those; this mode grows the assets and the log.
  return { accounts: 10_000, sessions: 10_000, uploads: 1_000, assets, otherAssets: store - assets, syncEntries: 0 };
}

/** The fresh store of the growth comparison: the same account and library, nothing else. */
const freshCounts = (grown: SeedCounts): SeedCounts => ({
  accounts: 0,
  sessions: 0,
  uploads: 0,
  assets: grown.assets,
  otherAssets: 0,
  syncEntries: 0,
});

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

type Running = Awaited<ReturnType<typeof startServer>>;

/** One seeded store with its server and floor running, its sides ready to measure. */
interface Prepared {
  label: string;
  summary: string;
  pages: number;
  sides: Side[];
  /** Signs in again: the seeding of a second store can outlast an access token. */
  signIn: () => Promise<void>;
  stop: () => Promise<void>;
}

/**
 * Seeds a store with `counts` behind a new server on `port`, restarts the server on it, starts the
 * floor on `floorPort`, walks the account on both and checks they agree; its four sides.
 */
async function prepare(
  label: string,
  store: { env: Record<string, string>; pgUrl?: string | undefined },
  counts: SeedCounts,
  ports: { port: number; floorPort: number },
): Promise<Prepared> {
  const dataDir = mkdtempSync(join(tmpdir(), 'strongroom-bench-sync-'));
  let server: Running | null = null;
  let floor: Awaited<ReturnType<typeof startScript>> | null = null;
  const stop = async () => {
    await floor?.stop();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    server = await startServer(ports.port, store.env, dataDir);
    const grown = await prepareGrowth(server.url, { dataDir, pgUrl: store.pgUrl }, counts);
    // A new process on the seeded store: no statement plan or cache from before the seeding.
    await server.stop();
    server = await profiled('server', () => startServer(ports.port, store.env, dataDir));
    const serverUrl = server.url;
    // Every load of this store shares `headers`, so a new sign-in reaches them all.
    const headers = { authorization: '', 'x-svc-protocol': VERSION };
    const signIn = async () => {
      const r = await api(serverUrl, 'POST', '/v1/auth/login', { address: grown.hotAddress, password: PASSWORD });
      if (r.status !== 200) throw new Error(`sign-in: ${r.status}`);
      headers.authorization = `Bearer ${r.body.access_token as string}`;
    };
    await signIn();
    const ourPath = (cursor: string | null) =>
      `/v1/sync?limit=${PAGE}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const ours = await walk(async (cursor) => {
      const r = await fetch(`${serverUrl}${ourPath(cursor)}`, { headers }).then(async (x) => ({
        status: x.status,
        body: (await x.json()) as { cursor: string; has_more: boolean; changes: unknown[] },
      }));
      if (r.status !== 200) throw new Error(`sync: ${r.status} ${JSON.stringify(r.body)}`);
      return { cursor: r.body.cursor, more: r.body.has_more, count: r.body.changes.length };
    });
    floor = await profiled('floor', () =>
      startScript(
        'bench/sync-floor-server.ts',
        ports.floorPort,
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
        `${label}: the walks differ: ours ${ours.total} changes in ${ours.starts.length} pages, the floor's ${floorWalk.total} in ${floorWalk.starts.length}`,
      );
    // The floor answers what the server answers, cursor aside: the same columns, the same body.
    const sample = async (path: string, base: string, h: Record<string, string> = {}) =>
      JSON.stringify(((await (await fetch(`${base}${path}`, { headers: h })).json()) as { changes: unknown }).changes);
    const recent = ours.starts.length - 1;
    for (const page of [0, recent])
      if (
        (await sample(ourPath(ours.starts[page]!), serverUrl, headers)) !==
        (await sample(floorPath(floorWalk.starts[page]!), floorUrl))
      )
        throw new Error(`${label}: the floor and the server answer different changes for page ${page}`);
    const get = (path: string) => ({ method: 'GET', path, headers });
    const sides: Side[] = [];
    const add = (name: string, pid: number, load: Load) => sides.push({ name, pid, load, rps: [], cpu: [], dbCpu: [] });
    add('from scratch: floor', floor.pid, {
      url: floorUrl,
      requests: floorWalk.starts.map((a) => ({ method: 'GET', path: floorPath(a) })),
    });
    add('from scratch: server', server.pid, { url: serverUrl, requests: ours.starts.map((c) => get(ourPath(c))) });
    add('recent cursor: floor', floor.pid, { url: `${floorUrl}${floorPath(floorWalk.starts[recent]!)}` });
    add('recent cursor: server', server.pid, { url: `${serverUrl}${ourPath(ours.starts[recent]!)}`, headers });
    return { label, summary: grown.summary, pages: ours.starts.length, sides, signIn, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const WORKLOADS = ['from scratch', 'recent cursor'] as const;

export async function runSyncScale(
  store: { name: string; env: Record<string, string>; pgUrl?: string | undefined },
  bareUrl: string,
  opts: {
    seconds: number;
    rounds: number;
    port: number;
    floorPort: number;
    only?: string | null;
    /** Ports of the fresh store's server and floor: with them, the growth comparison. */
    growth?: { port: number; floorPort: number } | undefined;
  },
): Promise<SyncScaleFigures> {
  if (opts.growth && store.name !== 'sqlite' && store.name !== 'postgresql')
    throw new Error(`--sync --growth runs on sqlite and postgresql, not ${store.name}`);
  const counts = syncScaleCounts();
  const stores: Prepared[] = [];
  const scratch = opts.growth && store.pgUrl ? await createScratchDatabase(pgUrlFromEnv()!, 'bench') : null;
  const db = store.pgUrl ? new pg.Client({ connectionString: store.pgUrl }) : null;
  const freshDb = scratch ? new pg.Client({ connectionString: scratch.url }) : null;
  try {
    if (opts.growth)
      stores.push(
        await prepare(
          'fresh',
          scratch ? { env: { ...store.env, SVC_DATABASE_URL: scratch.url }, pgUrl: scratch.url } : store,
          freshCounts(counts),
          opts.growth,
        ),
      );
    stores.push(await prepare('grown', store, counts, opts));
    // --only WORDS: the workloads whose name holds them ("scratch", "cursor"), floor and server alike.
    const wanted = WORKLOADS.filter((w) => !opts.only || w.includes(opts.only.toLowerCase()));
    if (wanted.length === 0) throw new Error(`--only ${opts.only}: no sync workload matches`);
    for (const p of stores) p.sides = p.sides.filter((s) => wanted.some((w) => s.name.startsWith(w)));
    await db?.connect();
    await freshDb?.connect();
    const dbOf = (p: Prepared) => (p.label === 'fresh' ? freshDb : db);
    for (const p of stores) await p.signIn();
    for (const p of stores) for (const s of p.sides) await measure({ ...s.load, seconds: 2 });
    const bare: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      for (const p of stores) await p.signIn();
      bare.push((await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds })).rps);
      // Each workload on every store in turn, the stores' order alternating from round to round.
      const order = round % 2 === 0 ? stores : [...stores].reverse();
      for (const workload of wanted)
        for (const p of order)
          for (const s of p.sides.filter((x) => x.name.startsWith(workload))) {
            const client = dbOf(p);
            const before = cpuMicros(s.pid);
            const dbBefore = client ? await backendCpu(client) : null;
            const f = await measure({ ...s.load, seconds: opts.seconds });
            const after = cpuMicros(s.pid);
            const dbAfter = client ? await backendCpu(client) : null;
            if (f.non2xx > 0 || f.errors > 0)
              throw new Error(`${p.label} ${s.name}: ${f.non2xx} non-2xx, ${f.errors} errors`);
            s.rps.push(f.rps);
            if (before !== null && after !== null && f.ok > 0) s.cpu.push((after - before) / f.ok);
            if (dbBefore && dbAfter && f.ok > 0) s.dbCpu.push(backendDelta(dbBefore, dbAfter) / f.ok);
          }
    }
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const ms = (us: number | null) => (us === null ? '–' : `${(us / 1000).toFixed(2)} ms`);
    const cpu = (x: { cpu_us: number; db_cpu_us: number | null }) =>
      db ? `${ms(x.cpu_us)} + ${ms(x.db_cpu_us)}` : ms(x.cpu_us);
    const side = (p: Prepared, name: string) => p.sides.find((s) => s.name === name)!;
    const ratiosOf = (p: Prepared, workload: string) => {
      const f = side(p, `${workload}: floor`);
      return side(p, `${workload}: server`).rps.map((r, i) => r / f.rps[i]!);
    };
    const spread = (xs: number[]) => `${pct(median(xs))} (${pct(Math.min(...xs))}-${pct(Math.max(...xs))})`;
    const lines: string[] = [];
    const json: Record<string, unknown> = { store: store.name, counts, stores: [] as unknown[] };
    for (const p of stores) {
      const rows = wanted.map((workload) => {
        const f = side(p, `${workload}: floor`);
        const s = side(p, `${workload}: server`);
        const ratios = ratiosOf(p, workload);
        return {
          workload,
          floor: { pages_per_s: median(f.rps), cpu_us: median(f.cpu), db_cpu_us: db ? median(f.dbCpu) : null },
          server: { pages_per_s: median(s.rps), cpu_us: median(s.cpu), db_cpu_us: db ? median(s.dbCpu) : null },
          ratio: median(ratios),
          spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
          rounds: { floor: f.rps, server: s.rps },
        };
      });
      (json.stores as unknown[]).push({ label: p.label, pages: p.pages, summary: p.summary, rows });
      lines.push(
        `${store.name}${stores.length > 1 ? `, ${p.label} store` : ''}: ${p.summary}; ${p.pages} pages of ${PAGE}. ${opts.rounds} rounds of ${opts.seconds} s, the floor then the server in each; bare route ${Math.round(median(bare))} req/s`,
        '',
        `| workload | floor pages/s | server pages/s | server ÷ floor (spread) | floor CPU/page${db ? ' (+ database)' : ''} | server CPU/page${db ? ' (+ database)' : ''} |`,
        '|---|---:|---:|---:|---:|---:|',
        ...rows.map(
          (r) =>
            `| ${r.workload} | ${Math.round(r.floor.pages_per_s)} | ${Math.round(r.server.pages_per_s)} | ${pct(r.ratio)} (${pct(r.spread.min)}-${pct(r.spread.max)})${r.ratio < 0.8 ? ' below 80 %' : ''} | ${cpu(r.floor)} | ${cpu(r.server)} |`,
        ),
        '',
      );
    }
    if (stores.length > 1) {
      const [fresh, grown] = stores as [Prepared, Prepared];
      const growth = wanted.map((workload) => {
        const f = ratiosOf(fresh, workload);
        const g = ratiosOf(grown, workload);
        const per = (name: string) =>
          side(grown, `${workload}: ${name}`).rps.map((r, i) => r / side(fresh, `${workload}: ${name}`).rps[i]!);
        const ratioOfRatios = g.map((r, i) => r / f[i]!);
        return { workload, ratioOfRatios, floor: per('floor'), server: per('server'), verdict: median(ratioOfRatios) };
      });
      json.growth = growth;
      lines.push(
        `${store.name}: growth, the grown store (${grown.summary}) beside the fresh one (${fresh.summary}), in the same rounds`,
        '',
        '| workload | (grown server ÷ floor) ÷ (fresh server ÷ floor) (spread) | grown ÷ fresh: floor | grown ÷ fresh: server | verdict |',
        '|---|---:|---:|---:|---|',
        ...growth.map(
          (g) =>
            `| ${g.workload} | ${spread(g.ratioOfRatios)} | ${spread(g.floor)} | ${spread(g.server)} | ${g.verdict >= 0.85 ? 'within 15 % of the fresh store' : 'more than 15 % below the fresh store'} |`,
        ),
        '',
      );
    }
    return { lines, json };
  } finally {
    await db?.end().catch(() => {});
    await freshDb?.end().catch(() => {});
    for (const p of stores) await p.stop();
    await scratch?.drop();
  }
}
