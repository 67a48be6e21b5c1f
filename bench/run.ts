/**
 * `npm run bench`: starts the real server (SQLite, then PostgreSQL when PG_URL is set) and a bare
 * Hono route, each in its own process on 127.0.0.1, and drives them with its load generator (load.ts) from this
 * process. Every scenario is measured in rounds that alternate with the bare route, so each ratio
 * compares two runs made moments apart on the same machine; the table shows medians and the
 * spread (lowest and highest per-round ratio). Where taskset allows, the servers and this load
 * generator run on different cores (reported in the output; BENCH_PIN=0 turns it off).
 *
 * BENCH_SECONDS sets one run's length (default 3), BENCH_ROUNDS the rounds per scenario (default 5),
 * BENCH_PORT the first of the loopback ports it uses (default 18100; the servers take the next three).
 *
 *   --json FILE  also write every figure to FILE
 *   --store NAME only this store (sqlite or postgresql), for a quicker look at one; or
 *                postgresql-pooler (SVC_PG_POOLER=transaction straight to PostgreSQL: what giving
 *                up session state costs) or postgresql-pgbouncer (the same through a PgBouncer in
 *                transaction mode on loopback, when pgbouncer is installed)
 *   --growth     run the scenarios on a fresh store, seed it at scale (growth.ts), run them again
 *   --only WORDS only the scenarios whose name contains WORDS (any case), in the paired and growth modes
 *   --explain    seed a store and print the hot-path statements' query plans only (no load)
 *   --storm      authenticated GET p99 alone and during a sign-in storm, against the hasher alone
 *   --sync       library sync at scale (an account of 100,000 assets, 1,000,000 across the store)
 *                beside its floor, one statement per page over the same database (sync-scale.ts); with
 *                --growth, a fresh store beside the grown one in the same rounds, and the verdict
 *   --floor      the refresh beside the least a refresh can cost on this machine (floor.ts)
 *   --peers      sign-in, session read and refresh beside better-auth and a naive jose + one-row
 *                server, as ratios to ours (peers.ts)
 *   --workers    every scenario on one server process and on SVC_WORKERS=2, with server (and
 *                PostgreSQL) CPU per request from /proc (workers.ts)
 *   --loadgen    the bench's load generator (load.ts) beside autocannon on the bare route: the CPU
 *                each spends per answer (loadgen.ts); BENCH_LOADGEN=autocannon runs any mode on it
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, measure, PASSWORD, startBare, startServer, setLaunchPrefix, type Figures, median } from './lib.js';
import { SCENARIOS, type Scenario, type ScenarioContext } from './scenarios.js';
import { pinCores } from './pinning.js';
import {
  explainHotPaths,
  isSlow,
  prepareGrowth,
  seedCounts,
  SLOW_MS,
  SQL_TRACE_PRELOAD,
  traceHotRequests,
  type Plan,
} from './growth.js';
import { runStorm, type StormFigures } from './storm.js';
import { runFloor, type FloorFigures } from './floor.js';
import { runWorkers, type WorkersFigures } from './workers.js';
import { runPeers, type PeersFigures } from './peers.js';
import { runLoadgen } from './loadgen.js';
import { runSyncScale, type SyncScaleFigures } from './sync-scale.js';
import { createScratchDatabase, pgUrlFromEnv, startPgBouncer } from '@strongroom/adapters-pg/testing';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** The bare route's port; the servers take the next few (BENCH_PORT, so two benches can run at once). */
const PORT = Number(process.env.BENCH_PORT ?? 18_100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function flag(name: string): boolean {
  return process.argv.includes(name);
}
function option(name: string): string | null {
  const i = process.argv.indexOf(name);
  if (i < 0) return null;
  const value = process.argv[i + 1];
  if (!value || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
}

interface Round {
  rps: number;
  bareRps: number;
  ratio: number;
  p50: number;
  p99: number;
}

interface Row {
  store: string;
  /** 'fresh' unless the growth mode seeded the store first ('grown'). */
  phase: 'fresh' | 'grown';
  scenario: string;
  rps: number;
  bareRps: number;
  /** Median over rounds of (scenario req/s ÷ bare req/s in the run just before). */
  ratio: number;
  /** Lowest and highest per-round ratio. */
  spread: { min: number; max: number };
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  note: string;
  rounds: Round[];
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const span = (s: { min: number; max: number }) => `${(s.min * 100).toFixed(1)}-${(s.max * 100).toFixed(1)} %`;

async function runScenario(
  scenario: Scenario,
  serverUrl: string,
  bareUrl: string,
  store: string,
  phase: Row['phase'],
  ctx?: ScenarioContext,
): Promise<Row> {
  const { load, after } = await scenario.setup(serverUrl, ctx);
  // The bare route had its warm-up at the start; a scenario that may repeat gets one of its own.
  if (scenario.warm) await measure({ ...load, seconds: 2 });
  const rounds: { bare: Figures; run: Figures }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const bare = await measure({ url: `${bareUrl}/bare`, seconds: SECONDS });
    const run = await measure({ ...load, seconds: SECONDS });
    rounds.push({ bare, run });
  }
  const note = (await after?.()) ?? '';
  const ratios = rounds.map((r) => r.run.rps / r.bare.rps);
  return {
    store,
    phase,
    scenario: scenario.name,
    rps: median(rounds.map((r) => r.run.rps)),
    bareRps: median(rounds.map((r) => r.bare.rps)),
    ratio: median(ratios),
    spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
    p50: median(rounds.map((r) => r.run.p50)),
    p99: median(rounds.map((r) => r.run.p99)),
    errors: rounds.reduce((n, r) => n + r.run.errors, 0),
    non2xx: rounds.reduce((n, r) => n + r.run.non2xx, 0),
    note,
    rounds: rounds.map((r, i) => ({
      rps: r.run.rps,
      bareRps: r.bare.rps,
      ratio: ratios[i]!,
      p50: r.run.p50,
      p99: r.run.p99,
    })),
  };
}

/** One line per scenario, one column group per store: req/s, ratio to bare with its spread, p99. */
function sideBySide(rows: Row[], stores: string[], phase: Row['phase']): string[] {
  const cell = (r: Row | undefined) =>
    r ? `${fmt(r.rps)} | ${pct(r.ratio)} (${span(r.spread)}) | ${r.p99}` : '– | – | –';
  return [
    `| scenario | ${stores.map((s) => `${s} req/s | ${s} / bare (spread) | ${s} p99 ms`).join(' | ')} |`,
    `|---|${stores.map(() => '---:|---:|---:').join('|')}|`,
    ...SCENARIOS.map(
      (sc) =>
        `| ${sc.name} | ${stores.map((st) => cell(rows.find((r) => r.store === st && r.phase === phase && r.scenario === sc.name))).join(' | ')} |`,
    ),
  ];
}

/** Fresh against grown, per scenario and store: the growth mode's verdict (within 15 %). */
function growthTable(rows: Row[]): string[] {
  const lines = [
    '| store | scenario | fresh / bare | grown / bare | grown ÷ fresh | fresh p99 ms | grown p99 ms |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const fresh of rows.filter((r) => r.phase === 'fresh')) {
    const grown = rows.find((r) => r.phase === 'grown' && r.store === fresh.store && r.scenario === fresh.scenario);
    if (!grown) continue;
    const ratio = grown.ratio / fresh.ratio;
    lines.push(
      `| ${fresh.store} | ${fresh.scenario} | ${pct(fresh.ratio)} (${span(fresh.spread)}) | ${pct(grown.ratio)} (${span(grown.spread)}) | ${pct(ratio)}${ratio < 0.85 ? ' (more than 15 % slower)' : ''} | ${fresh.p99} | ${grown.p99} |`,
    );
  }
  return lines;
}

function planLines(plans: Plan[]): string[] {
  const lines: string[] = [];
  for (const p of plans) {
    const flags = [
      p.fullScan ? 'FULL SCAN' : '',
      isSlow(p) ? `SLOW (${p.ms.toFixed(3)} ms${p.removed > 0 ? `, ${p.removed} rows thrown away` : ''})` : '',
    ].filter(Boolean);
    lines.push(
      `[${p.store}] ${p.name}${flags.length > 0 ? `   <-- ${flags.join(', ')}` : ''}`,
      `  ${p.sql}`,
      ...p.plan.map((l) => `    ${l}`),
    );
  }
  const scans = plans.filter((p) => p.fullScan);
  const slow = plans.filter(isSlow);
  lines.push(
    scans.length === 0
      ? 'no full scan on the hot paths'
      : `${scans.length} statement(s) scan a whole table: ${scans.map((p) => `${p.store}: ${p.name}`).join('; ')}`,
  );
  lines.push(
    slow.length === 0
      ? `none slower than ${SLOW_MS} ms or throwing away more than 1,000 rows`
      : `${slow.length} statement(s) slower than ${SLOW_MS} ms or throwing away more than 1,000 rows: ${slow.map((p) => `${p.store}: ${p.name} (${p.ms.toFixed(3)} ms)`).join('; ')}`,
  );
  return lines;
}

interface Store {
  name: string;
  env: Record<string, string>;
  pgUrl?: string;
  drop?: () => Promise<void>;
}

async function stores(only: string | null): Promise<Store[]> {
  if (only !== null && !['sqlite', 'postgresql', 'postgresql-pooler', 'postgresql-pgbouncer'].includes(only)) {
    throw new Error(`--store: sqlite, postgresql, postgresql-pooler or postgresql-pgbouncer, not ${only}`);
  }
  const pgUrl = pgUrlFromEnv();
  if ((only === 'postgresql-pooler' || only === 'postgresql-pgbouncer') && pgUrl) {
    const scratch = await createScratchDatabase(pgUrl, 'bench');
    if (only === 'postgresql-pooler')
      return [
        {
          name: only,
          env: { SVC_DATABASE_URL: scratch.url, SVC_PG_POOLER: 'transaction' },
          pgUrl: scratch.url,
          drop: scratch.drop,
        },
      ];
    // As many server connections as one process's pool: the figure is the hop and the mode, not a queue.
    const bouncer = await startPgBouncer(pgUrl, 10);
    const url = bouncer.through(scratch.url);
    return [
      {
        name: only,
        env: { SVC_DATABASE_URL: url, SVC_PG_POOLER: 'transaction' },
        pgUrl: url,
        drop: async () => (await bouncer.stop(), await scratch.drop()),
      },
    ];
  }
  const list: Store[] = only === 'postgresql' ? [] : [{ name: 'sqlite', env: {} }];
  if (only === 'sqlite') return list;
  // Every scenario also runs on PostgreSQL, in a scratch database on PG_URL's server dropped after.
  if (pgUrl) {
    const scratch = await createScratchDatabase(pgUrl, 'bench');
    list.push({ name: 'postgresql', env: { SVC_DATABASE_URL: scratch.url }, pgUrl: scratch.url, drop: scratch.drop });
  } else {
    process.stderr.write(
      'bench: PG_URL is not set: PostgreSQL column skipped (the server needs a PostgreSQL server, not PGlite)\n',
    );
  }
  return list;
}

async function main(): Promise<void> {
  const jsonFile = option('--json');
  const growth = flag('--growth');
  const explainOnly = flag('--explain');
  const storm = flag('--storm');
  const floor = flag('--floor');
  const workers = flag('--workers');
  const peers = flag('--peers');
  const syncScale = flag('--sync');
  const only = option('--only');
  const scenarios =
    only === null ? SCENARIOS : SCENARIOS.filter((s) => s.name.toLowerCase().includes(only.toLowerCase()));
  if (scenarios.length === 0 && !syncScale) throw new Error(`--only ${only}: no scenario matches`);
  if (flag('--loadgen')) {
    const pinning = pinCores();
    setLaunchPrefix(pinning.serverPrefix);
    const bare = await startBare(PORT);
    try {
      await measure({ url: `${bare.url}/bare`, seconds: 3 });
      const figures = await runLoadgen(bare.url, { rounds: ROUNDS, seconds: SECONDS });
      process.stdout.write(`${[pinning.description, ...figures.lines].join('\n')}\n`);
    } finally {
      await bare.stop();
    }
    return;
  }
  const mode = syncScale
    ? 'sync'
    : storm
      ? 'storm'
      : floor
        ? 'floor'
        : workers
          ? 'workers'
          : peers
            ? 'peers'
            : explainOnly
              ? 'explain'
              : growth
                ? 'growth'
                : 'paired';

  // Two workers on the one core pinning leaves the servers would measure nothing.
  const pinning =
    mode === 'workers'
      ? pinCores(true, 'the workers mode: servers, load generator and bare route share every core')
      : pinCores();
  setLaunchPrefix(pinning.serverPrefix);
  process.stdout.write(`${pinning.description}\n`);

  const rows: Row[] = [];
  const plans: Plan[] = [];
  const stormFigures: StormFigures[] = [];
  const floorFigures: FloorFigures[] = [];
  const workersFigures: WorkersFigures[] = [];
  const peersFigures: PeersFigures[] = [];
  const syncFigures: SyncScaleFigures[] = [];
  const bare =
    mode === 'sync' ||
    mode === 'paired' ||
    mode === 'growth' ||
    mode === 'floor' ||
    mode === 'workers' ||
    mode === 'peers'
      ? await startBare(PORT)
      : null;
  // Warm the load generator and the baseline first: both speed up markedly as the JIT settles.
  if (bare) await measure({ url: `${bare.url}/bare`, seconds: 3 });

  const list = await stores(option('--store'));
  try {
    for (const store of list) {
      if (mode === 'sync') {
        try {
          syncFigures.push(
            await runSyncScale(store, bare!.url, {
              seconds: SECONDS,
              rounds: ROUNDS,
              port: PORT + 1,
              floorPort: PORT + 2,
              only,
              growth: growth ? { port: PORT + 3, floorPort: PORT + 4 } : undefined,
            }),
          );
        } finally {
          await store.drop?.();
        }
        continue;
      }
      if (mode === 'workers') {
        // A database of its own for each server, so neither reads the other's rows.
        const second = store.pgUrl ? await createScratchDatabase(pgUrlFromEnv()!, 'bench') : null;
        try {
          const urls: [string, string] | null = store.pgUrl && second ? [store.pgUrl, second.url] : null;
          workersFigures.push(
            await runWorkers(store.name, {}, urls, bare!.url, {
              seconds: SECONDS,
              rounds: ROUNDS,
              ports: [PORT + 1, PORT + 3],
            }),
          );
        } finally {
          await second?.drop();
          await store.drop?.();
        }
        continue;
      }
      const dataDir = mkdtempSync(join(tmpdir(), 'strongroom-bench-'));
      let server = await startServer(PORT + 1, store.env, dataDir);
      try {
        if (mode === 'storm') {
          stormFigures.push(
            await runStorm(server.url, store.name, pinning.serverPrefix, { seconds: SECONDS, rounds: ROUNDS }),
          );
          continue;
        }
        if (mode === 'peers') {
          // On PostgreSQL each peer gets a scratch database of its own on the same server.
          const scratch = store.pgUrl
            ? [
                await createScratchDatabase(pgUrlFromEnv()!, 'peer'),
                await createScratchDatabase(pgUrlFromEnv()!, 'peer'),
              ]
            : null;
          try {
            const urls: [string, string] | null = scratch ? [scratch[0]!.url, scratch[1]!.url] : null;
            peersFigures.push(
              await runPeers(store.name, server, bare!.url, urls, {
                seconds: SECONDS,
                rounds: ROUNDS,
                ports: [PORT + 2, PORT + 3],
              }),
            );
          } finally {
            for (const d of scratch ?? []) await d.drop();
          }
          continue;
        }
        if (mode === 'floor') {
          floorFigures.push(
            await runFloor(store.name, server, bare!.url, store.pgUrl ? { FLOOR_PG_URL: store.pgUrl } : {}, {
              seconds: SECONDS,
              rounds: ROUNDS,
              port: PORT + 2,
            }),
          );
          continue;
        }
        if (mode !== 'explain')
          for (const scenario of scenarios)
            rows.push(await runScenario(scenario, server.url, bare!.url, store.name, 'fresh'));
        if (mode === 'growth' || mode === 'explain') {
          const grown = await prepareGrowth(server.url, { dataDir: server.dataDir, pgUrl: store.pgUrl }, seedCounts());
          process.stdout.write(`${store.name}: ${grown.summary}\n`);
          // The statements the hot requests run, read from a server that records them (sql-trace.mjs),
          // then planned on the seeded store.
          await server.stop();
          const traceFile = join(dataDir, 'sql-trace.jsonl');
          writeFileSync(traceFile, '');
          server = await startServer(
            PORT + 1,
            { ...store.env, NODE_OPTIONS: `--import=${SQL_TRACE_PRELOAD}`, BENCH_SQL_TRACE: traceFile },
            dataDir,
          );
          const traced = await traceHotRequests(server.url, traceFile, grown.hotAddress);
          await server.stop();
          plans.push(...(await explainHotPaths({ dataDir: server.dataDir, pgUrl: store.pgUrl }, traced)));
          if (mode === 'growth') {
            // A new server process on the seeded store, so the grown figures start as cold as the fresh ones did.
            server = await startServer(PORT + 1, store.env, dataDir);
            // A fresh access token for the hot account (the one from before seeding may have lapsed).
            const signIn = await api(server.url, 'POST', '/v1/auth/login', {
              address: grown.hotAddress,
              password: PASSWORD,
            });
            if (signIn.status !== 200)
              throw new Error(`hot account sign-in: ${signIn.status} ${JSON.stringify(signIn.body)}`);
            const ctx = { hotToken: signIn.body.access_token as string };
            for (const scenario of scenarios)
              rows.push(await runScenario(scenario, server.url, bare!.url, store.name, 'grown', ctx));
          }
        }
      } finally {
        await server.stop();
        rmSync(dataDir, { recursive: true, force: true });
        await store.drop?.();
      }
    }
  } finally {
    await bare?.stop();
  }

  const lines: string[] = [];
  if (rows.length > 0) {
    const names = list.map((s) => s.name);
    lines.push(
      `${ROUNDS} rounds of ${SECONDS} s per scenario, each right after a run of the bare Hono route; medians shown, spread = lowest-highest per-round ratio.`,
      `bare Hono route: ${fmt(median(rows.map((r) => r.bareRps)))} req/s (median over all rounds)`,
      '',
      '| store | phase | scenario | req/s | bare req/s | ratio to bare | spread | p50 ms | p99 ms | errors | non-2xx | note |',
      '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
      ...rows.map(
        (r) =>
          `| ${r.store} | ${r.phase} | ${r.scenario} | ${fmt(r.rps)} | ${fmt(r.bareRps)} | ${pct(r.ratio)} | ${span(r.spread)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${r.note} |`,
      ),
      '',
      ...sideBySide(rows, names, 'fresh'),
    );
    if (mode === 'growth')
      lines.push('', 'after seeding:', '', ...sideBySide(rows, names, 'grown'), '', ...growthTable(rows));
  }
  if (plans.length > 0)
    lines.push('', 'query plans of the hot-path statements on the seeded store:', ...planLines(plans));
  for (const s of stormFigures) lines.push('', ...s.lines);
  for (const f of floorFigures) lines.push('', ...f.lines);
  for (const w of workersFigures) lines.push('', ...w.lines);
  for (const p of peersFigures) lines.push('', ...p.lines);
  for (const f of syncFigures) lines.push('', ...f.lines);
  process.stdout.write(`${lines.join('\n')}\n`);

  if (jsonFile) {
    const doc = {
      generated_at: new Date().toISOString(),
      mode,
      seconds: SECONDS,
      rounds: ROUNDS,
      pinning: {
        description: pinning.description,
        server_cores: pinning.serverCores,
        pinned: pinning.serverPrefix.length > 0,
      },
      figures: rows.map((r) => ({
        scenario: r.scenario,
        store: r.store,
        phase: r.phase,
        rps: r.rps,
        bare_rps: r.bareRps,
        ratio: r.ratio,
        p50_ms: r.p50,
        p99_ms: r.p99,
        errors: r.errors,
        non_2xx: r.non2xx,
        spread: { min: r.spread.min, max: r.spread.max },
        note: r.note,
        rounds: r.rounds.map((x) => ({
          rps: x.rps,
          bare_rps: x.bareRps,
          ratio: x.ratio,
          p50_ms: x.p50,
          p99_ms: x.p99,
        })),
      })),
      ...(plans.length > 0
        ? {
            plans: plans.map((p) => ({
              store: p.store,
              statement: p.name,
              sql: p.sql,
              plan: p.plan,
              full_scan: p.fullScan,
              ms: p.ms,
              rows_thrown_away: p.removed,
              slow: isSlow(p),
            })),
          }
        : {}),
      ...(stormFigures.length > 0 ? { storm: stormFigures.map((s) => s.json) } : {}),
      ...(floorFigures.length > 0 ? { floor: floorFigures.map((f) => f.json) } : {}),
      ...(workersFigures.length > 0 ? { workers: workersFigures.map((w) => w.json) } : {}),
      ...(peersFigures.length > 0 ? { peers: peersFigures.map((p) => p.json) } : {}),
      ...(syncFigures.length > 0 ? { sync: syncFigures.map((f) => f.json) } : {}),
    };
    writeFileSync(jsonFile, `${JSON.stringify(doc, null, 2)}\n`);
    process.stdout.write(`figures written to ${jsonFile}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
