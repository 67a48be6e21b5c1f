/**
 * `npm run soak`: the mixed write load (sign-ins, refreshes, revocations, upload creations, TOTP
 * sign-ins, registrations) against the real server in its own process for SOAK_SECONDS (default
 * 600), reporting the server's RSS and heap at the start and the end (after a full collection
 * each time), the error count, and the p99 latency and memory of every minute. RSS growth is
 * judged on the medians of the first and last three readings (argon2 buffers make single readings
 * swing by tens of MiB); heap growth on the single readings. At the end every acknowledged
 * write is checked once more. Exits non-zero when there was any error or memory grew 10 % or more.
 * Not part of `npm test`.
 *
 * SOAK_SECONDS  length of the measured run (default 600)
 * SOAK_WARMUP_S warm-up before the start figures (default 30, or a tenth of a shorter run)
 * SOAK_WINDOW_S length of one latency window (default 60)
 * SOAK_WORKERS  concurrent request loops (default 4)
 * SOAK_SEED     the load's seed (printed)
 * --pg          run on a scratch database under PG_URL instead of SQLite
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';
import { startServerProcess } from '@strongroom/tests/spawn';
import { MixedWorkload } from '@strongroom/tests/fault/workload';
import { median } from './lib.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const WARMUP_S = Number(process.env.SOAK_WARMUP_S ?? Math.min(30, Math.ceil(SECONDS / 10)));
const WINDOW_S = Number(process.env.SOAK_WINDOW_S ?? 60);
const WORKERS = Number(process.env.SOAK_WORKERS ?? 4);
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 1e9));
const ON_PG = process.argv.includes('--pg');
/** Memory may grow by less than this over the run. */
const MAX_GROWTH = 0.1;

interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const growth = (from: number, to: number) => (to - from) / from;
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;

function p99(xs: number[]): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

async function main(): Promise<number> {
  const pgUrl = pgUrlFromEnv();
  if (ON_PG && !pgUrl) throw new Error('--pg needs PG_URL');
  const scratch = ON_PG ? await createScratchDatabase(pgUrl!, 'soak') : null;
  const dataDir = mkdtempSync(join(tmpdir(), 'strongroom-soak-'));
  const server = await startServerProcess({
    dataDir,
    env: { SVC_QUOTA_HARD_BYTES: '', ...(scratch ? { SVC_DATABASE_URL: scratch.url } : {}) },
    nodeArgs: ['--expose-gc', '--import', './bench/soak-probe.ts'],
    ipc: true,
  });
  const memory = () =>
    new Promise<Memory>((resolve) => {
      server.child.once('message', (m) => resolve(m as Memory));
      server.child.send('memory');
    });
  try {
    let window: number[] = [];
    const load = new MixedWorkload({
      seed: SEED,
      plainAccounts: 6,
      totpAccounts: 6,
      maxTracked: 100,
      onLatency: (ms) => window.push(ms),
    });
    load.url = server.url;
    console.log(
      `soak: ${ON_PG ? 'PostgreSQL' : 'SQLite'}, ${SECONDS} s after ${WARMUP_S} s of warm-up, ${WORKERS} workers, seed ${SEED}`,
    );
    await load.setup();
    const abort = new AbortController();
    const running = load.run(abort.signal, WORKERS);
    await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
    const start = await memory();
    const errorsAtStart = load.stats();
    window = [];
    const rows: string[] = [];
    /** RSS at the end of each window, for the medians below. */
    const samples: number[] = [start.rss];
    const began = Date.now();
    let windowStart = began;
    const closeWindow = async () => {
      const now = Date.now();
      const s = load.stats();
      const latencies = window;
      window = [];
      windowStart = now;
      const m = await memory();
      samples.push(m.rss);
      rows.push(
        `  ${((now - began) / 1000).toFixed(0).padStart(5)} s  ${String(latencies.length).padStart(7)} requests  p99 ${p99(latencies).toFixed(1).padStart(7)} ms  errors so far ${s.violations.length + s.unknown}  RSS ${mib(m.rss)}  heap ${mib(m.heapUsed)}`,
      );
      console.log(rows.at(-1));
    };
    while (Date.now() - began < SECONDS * 1000) {
      const left = SECONDS * 1000 - (Date.now() - began);
      await new Promise((r) => setTimeout(r, Math.min(WINDOW_S * 1000 - (Date.now() - windowStart), left)));
      if (Date.now() - windowStart >= WINDOW_S * 1000 - 5 || Date.now() - began >= SECONDS * 1000) await closeWindow();
    }
    abort.abort();
    await running;
    const end = await memory();
    const stats = load.stats();
    const { problems, checks } = await load.verify();
    const errors = stats.violations.length + stats.unknown;
    samples.push(end.rss);
    // RSS judged on the medians of the first and last three readings: a single reading may catch
    // argon2's 19 MiB buffers that glibc has not handed back yet (a swing, not growth). The heap,
    // read after a full collection, is judged on the single readings.
    const rssFirst = median(samples.slice(0, 3));
    const rssLast = median(samples.slice(-3));
    const rssGrowth = growth(rssFirst, rssLast);
    const heapGrowth = growth(start.heapUsed, end.heapUsed);
    console.log('');
    console.log(`acknowledged ${stats.acknowledged} (${JSON.stringify(stats.byOp)}), refused ${stats.refused}`);
    console.log(`errors: ${errors} (${errorsAtStart.violations.length + errorsAtStart.unknown} during warm-up)`);
    for (const v of stats.violations.slice(0, 10)) console.log(`  ${v}`);
    console.log(
      `RSS:  ${mib(start.rss)} -> ${mib(end.rss)} (${pct(growth(start.rss, end.rss))}); median of the first and last three readings ${mib(rssFirst)} -> ${mib(rssLast)} (${pct(rssGrowth)})`,
    );
    console.log(
      `heap: ${mib(start.heapUsed)} -> ${mib(end.heapUsed)} (${pct(heapGrowth)}), total ${mib(start.heapTotal)} -> ${mib(end.heapTotal)}`,
    );
    console.log(`final check of acknowledged writes: ${problems.length} problems (${JSON.stringify(checks)})`);
    for (const p of problems.slice(0, 10)) console.log(`  ${p}`);
    const passed = errors === 0 && problems.length === 0 && rssGrowth < MAX_GROWTH && heapGrowth < MAX_GROWTH;
    console.log(passed ? 'PASS' : `FAIL (errors 0, no problems, growth under ${MAX_GROWTH * 100} % required)`);
    return passed ? 0 : 1;
  } finally {
    await server.stop();
    await scratch?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
