/**
 * `npm run bench`: starts the real server (SQLite) and a bare Hono route, each in its own process on
 * 127.0.0.1, drives both with autocannon in this process, and prints each scenario as a ratio of
 * the bare route's requests per second measured in the same run. BENCH_SECONDS sets the duration.
 */
import { measure, startBare, startServer, type Figures } from './lib.js';
import { SCENARIOS } from './scenarios.js';

interface Row {
  store: string;
  scenario: string;
  figures: Figures & { note?: string };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const bare = await startBare(18_100);
  const baseline = await measure({ url: `${bare.url}/bare` });
  await bare.stop();

  const rows: Row[] = [];
  const stores: { name: string; env: Record<string, string> }[] = [{ name: 'sqlite', env: {} }];
  for (const store of stores) {
    const server = await startServer(18_101, store.env);
    try {
      for (const scenario of SCENARIOS) rows.push({ store: store.name, scenario: scenario.name, figures: await scenario.run(server.url) });
    } finally {
      await server.stop();
    }
  }

  const lines = [
    `bare Hono route (baseline): ${fmt(baseline.rps)} req/s, p99 ${baseline.p99} ms`,
    '',
    '| store | scenario | req/s | ratio to bare | p99 ms | errors | non-2xx | note |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...rows.map((r) => `| ${r.store} | ${r.scenario} | ${fmt(r.figures.rps)} | ${((r.figures.rps / baseline.rps) * 100).toFixed(1)} % | ${r.figures.p99} | ${r.figures.errors} | ${r.figures.non2xx} | ${r.figures.note ?? ''} |`),
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
