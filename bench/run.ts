/**
 * `npm run bench`: starts the real server (SQLite, then PostgreSQL when PG_URL is set) and a bare
 * Hono route, each in its own process on 127.0.0.1, and drives them with autocannon from this
 * process. Every scenario is measured in rounds that alternate with the bare route, so each ratio
 * compares two runs made moments apart on the same machine; the table shows medians.
 *
 * BENCH_SECONDS sets one run's length (default 3), BENCH_ROUNDS the rounds per scenario (default 5).
 */
import { measure, startBare, startServer, type Figures } from './lib.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

interface Row {
  store: string;
  scenario: string;
  rps: number;
  bareRps: number;
  /** Median over rounds of (scenario req/s ÷ bare req/s in the run just before). */
  ratio: number;
  p99: number;
  errors: number;
  non2xx: number;
  note: string;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function runScenario(scenario: Scenario, serverUrl: string, bareUrl: string, store: string): Promise<Row> {
  const { load, after } = await scenario.setup(serverUrl);
  // The bare route had its warm-up at the start; a scenario that may repeat gets one of its own.
  if (scenario.warm) await measure({ ...load, seconds: 2 });
  const rounds: { bare: Figures; run: Figures }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const bare = await measure({ url: `${bareUrl}/bare`, seconds: SECONDS });
    const run = await measure({ ...load, seconds: SECONDS });
    rounds.push({ bare, run });
  }
  const note = (await after?.()) ?? '';
  return {
    store,
    scenario: scenario.name,
    rps: median(rounds.map((r) => r.run.rps)),
    bareRps: median(rounds.map((r) => r.bare.rps)),
    ratio: median(rounds.map((r) => r.run.rps / r.bare.rps)),
    p99: median(rounds.map((r) => r.run.p99)),
    errors: rounds.reduce((n, r) => n + r.run.errors, 0),
    non2xx: rounds.reduce((n, r) => n + r.run.non2xx, 0),
    note,
  };
}

/** One line per scenario, one column group per store: req/s, ratio to bare, p99. */
function sideBySide(rows: Row[], stores: string[]): string[] {
  const cell = (r: Row | undefined) => (r ? `${fmt(r.rps)} | ${pct(r.ratio)} | ${r.p99}` : '– | – | –');
  return [
    `| scenario | ${stores.map((s) => `${s} req/s | ${s} / bare | ${s} p99 ms`).join(' | ')} |`,
    `|---|${stores.map(() => '---:|---:|---:').join('|')}|`,
    ...SCENARIOS.map((sc) => `| ${sc.name} | ${stores.map((st) => cell(rows.find((r) => r.store === st && r.scenario === sc.name))).join(' | ')} |`),
  ];
}

async function main(): Promise<void> {
  const bare = await startBare(18_100);
  // Warm the load generator and the baseline first: both speed up markedly as the JIT settles.
  await measure({ url: `${bare.url}/bare`, seconds: 3 });

  const rows: Row[] = [];
  const stores: { name: string; env: Record<string, string>; drop?: () => Promise<void> }[] = [{ name: 'sqlite', env: {} }];
  // Every scenario also runs on PostgreSQL, in a scratch database on PG_URL's server dropped after.
  const pgUrl = pgUrlFromEnv();
  if (pgUrl) {
    const scratch = await createScratchDatabase(pgUrl, 'bench');
    stores.push({ name: 'postgresql', env: { SVC_DATABASE_URL: scratch.url }, drop: scratch.drop });
  } else {
    process.stderr.write('bench: PG_URL is not set: PostgreSQL column skipped (the server needs a PostgreSQL server, not PGlite)\n');
  }
  try {
    for (const store of stores) {
      const server = await startServer(18_101, store.env);
      try {
        for (const scenario of SCENARIOS) rows.push(await runScenario(scenario, server.url, bare.url, store.name));
      } finally {
        await server.stop();
        await store.drop?.();
      }
    }
  } finally {
    await bare.stop();
  }

  const lines = [
    `${ROUNDS} rounds of ${SECONDS} s per scenario, each right after a run of the bare Hono route; medians shown.`,
    `bare Hono route: ${fmt(median(rows.map((r) => r.bareRps)))} req/s (median over all rounds)`,
    '',
    '| store | scenario | req/s | bare req/s | ratio to bare | p99 ms | errors | non-2xx | note |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map((r) => `| ${r.store} | ${r.scenario} | ${fmt(r.rps)} | ${fmt(r.bareRps)} | ${pct(r.ratio)} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${r.note} |`),
    '',
    ...sideBySide(rows, stores.map((s) => s.name)),
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
