/**
 * `npm run bench`: starts the real server (SQLite, then PostgreSQL when PG_URL is set) and a bare Hono route, each in its own process on
 * 127.0.0.1, drives both with autocannon in this process, and prints each scenario as a ratio of
 * the bare route's requests per second measured in the same run. BENCH_SECONDS sets the duration.
 */
import { measure, startBare, startServer, type Figures } from './lib.js';
import { SCENARIOS } from './scenarios.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

interface Row {
  store: string;
  scenario: string;
  figures: Figures & { note?: string };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** One line per scenario, one column group per store: req/s, share of the bare route, p99. */
function sideBySide(rows: Row[], stores: string[], bareRps: number): string[] {
  const cell = (r: Row | undefined) => (r ? `${fmt(r.figures.rps)} | ${((r.figures.rps / bareRps) * 100).toFixed(1)} % | ${r.figures.p99}` : '– | – | –');
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
  const baseline = await measure({ url: `${bare.url}/bare` });
  await bare.stop();

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
  for (const store of stores) {
    const server = await startServer(18_101, store.env);
    try {
      for (const scenario of SCENARIOS) rows.push({ store: store.name, scenario: scenario.name, figures: await scenario.run(server.url) });
    } finally {
      await server.stop();
      await store.drop?.();
    }
  }

  const lines = [
    `bare Hono route (baseline): ${fmt(baseline.rps)} req/s, p99 ${baseline.p99} ms`,
    '',
    '| store | scenario | req/s | ratio to bare | p99 ms | errors | non-2xx | note |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...rows.map((r) => `| ${r.store} | ${r.scenario} | ${fmt(r.figures.rps)} | ${((r.figures.rps / baseline.rps) * 100).toFixed(1)} % | ${r.figures.p99} | ${r.figures.errors} | ${r.figures.non2xx} | ${r.figures.note ?? ''} |`),
    '',
    ...sideBySide(rows, stores.map((s) => s.name), baseline.rps),
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
