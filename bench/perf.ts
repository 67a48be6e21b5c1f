/**
 * `npm run bench:perf -- <scenario words> [seconds]`: one scenario against one server (PostgreSQL
 * when PG_URL is set), sampled by Linux `perf` while the load runs, after a warm-up, and summed up.
 *
 * Why beside bench:profile: V8's `--cpu-prof` samples wall time from the process's start, setup
 * included, and a sample taken while the process waits in a system call or is off the CPU counts
 * against the function that called it; `perf` samples CPU only, in the measured window only, and
 * sees inside V8 itself. Run with `--perf-basic-prof-only-functions`, V8 names the compiled
 * JavaScript for perf. Its summary attributes each sample to the nearest JavaScript function on
 * its stack, so V8's own slow paths (a property load or definition that missed its inline cache,
 * an object moved to a new shape, a deoptimization) are charged to the code that caused them.
 * That is how upload creation's spread-built objects showed up (see docs/capacity.md).
 *
 * With `--floor`, the floor server (floor-server.ts: the scenario's floor load, the guarded floor for
 * uploads) is profiled the same way after the server, alone, on the same store, and the two are
 * printed side by side in µs of CPU per request: where the server's CPU beyond its floor goes.
 *
 * Needs `perf` (Debian: linux-perf) and permission to sample the process (root, or
 * kernel.perf_event_paranoid <= 1). The raw samples stay in the printed directory for `perf report`.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { backendCpu, backendDelta, cpuMicros, measure, setLaunchPrefix, startServer, type Load } from './lib.js';
import { scenarioMatching } from './scenarios.js';
import { floorLoads, floorOf, startFloor } from './floor.js';
import { compareToFloor, latestPerfMap, summarise, tally, workPerRequest } from './perf-report.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const args = process.argv.slice(2);
const againstFloor = args.includes('--floor');
const [wanted = '', secondsArg] = args.filter((a) => a !== '--floor');
const seconds = Number(secondsArg ?? 8);
const scenario = scenarioMatching(wanted);
await promisify(execFile)('perf', ['--version']).catch(() => {
  throw new Error('bench:perf needs Linux perf on the PATH (Debian: apt-get install linux-perf)');
});

const dir = mkdtempSync(join(tmpdir(), 'strongroom-perf-'));
// Node refuses V8 flags of this kind in NODE_OPTIONS: a launcher puts it right after the node binary.
const launcher = join(dir, 'node-perf.sh');
writeFileSync(launcher, `#!/bin/sh\nnode="$1"; shift\nexec "$node" --perf-basic-prof-only-functions "$@"\n`);
chmodSync(launcher, 0o755);
setLaunchPrefix([launcher]);

interface Profiled {
  /** `perf script` output. */
  script: string;
  data: string;
  /** The process's CPU per answered request. */
  cpuPerRequest: number;
}

/**
 * One side: a warm-up, then the load with perf sampling the process and its CPU (and the database
 * backends') read from /proc around it. The process is stopped before its samples are read, so the
 * next side runs alone, and so V8's map of its code is complete.
 */
async function profile(
  side: 'server' | 'floor',
  proc: { pid: number; stop(): Promise<void> },
  load: Load,
  db: pg.Client | null,
): Promise<Profiled> {
  const data = join(dir, `${side}.data`);
  let cpuPerRequest: number;
  try {
    // Past the warm-up the optimizing compiler has mostly settled; its later work is still counted.
    await measure({ ...load, seconds: 3 });
    // PostgreSQL's statistics reach its views within a second of a backend going idle: wait that
    // long on both sides of the window, so neither the warm-up's work nor the run's is misplaced.
    const workBefore = db ? await databaseWork(db) : null;
    if (db && tracked) await db.query('SELECT pg_stat_statements_reset()');
    const recorder = spawn(
      'perf',
      ['record', '-F', '1999', '-g', '-p', String(proc.pid), '-o', data, '--', 'sleep', String(seconds)],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const recorded = new Promise<number | null>((done) => recorder.on('exit', done));
    const before = cpuMicros(proc.pid);
    const dbBefore = db ? await backendCpu(db) : null;
    const f = await measure({ ...load, seconds });
    const after = cpuMicros(proc.pid);
    const dbAfter = db ? await backendCpu(db) : null;
    if ((await recorded) !== 0) throw new Error('perf record failed (permissions? see kernel.perf_event_paranoid)');
    const perRequest = (us: number) => us / Math.max(f.ok, 1);
    cpuPerRequest = perRequest(after! - before!);
    const inDb =
      dbBefore && dbAfter
        ? ` + ${perRequest(backendDelta(dbBefore, dbAfter)).toFixed(1)} µs in the database backends`
        : '';
    console.log(
      `${side}: ${Math.round(f.rps)} req/s, p99 ${f.p99.toFixed(1)} ms, non-2xx ${f.non2xx}, CPU ${cpuPerRequest.toFixed(1)} µs per request${inDb}`,
    );
    if (db && workBefore) {
      const w = workPerRequest(workBefore, await databaseWork(db), f.ok);
      console.log(
        `${side}: the database's work per request: ${w.transactions.toFixed(2)} transactions, ${w.walRecords.toFixed(1)} WAL records (${Math.round(w.walBytes)} bytes), ` +
          `${w.blocks.toFixed(1)} buffer reads, ${w.tuplesRead.toFixed(1)} rows read, ${w.tuplesWritten.toFixed(1)} rows written`,
      );
      if (tracked) console.log((await statementWork(db, f.ok)).map((line) => `${side}:   ${line}`).join('\n'));
    }
  } finally {
    await proc.stop();
  }
  // perf reads V8's map of the process's code when it names the samples: the latest name for each address.
  const map = `/tmp/perf-${proc.pid}.map`;
  if (existsSync(map)) writeFileSync(map, latestPerfMap(readFileSync(map, 'utf8')));
  const { stdout } = await promisify(execFile)('perf', ['script', '-i', data], { maxBuffer: 1 << 30 });
  return { script: stdout, data, cpuPerRequest };
}

type DatabaseWork = Record<
  'transactions' | 'walRecords' | 'walBytes' | 'blocks' | 'tuplesRead' | 'tuplesWritten',
  number
>;

/**
 * This database's cumulative work (pg_stat_database) and the cluster's WAL (pg_stat_wal: only this
 * bench writes on a quiet machine), read after a second's pause (see profile).
 */
async function databaseWork(db: pg.Client): Promise<DatabaseWork> {
  await new Promise((done) => setTimeout(done, 1200));
  const { rows } =
    await db.query(`SELECT d.xact_commit + d.xact_rollback AS transactions, w.wal_records AS "walRecords", w.wal_bytes AS "walBytes",
      d.blks_hit + d.blks_read AS blocks, d.tup_returned AS "tuplesRead", d.tup_inserted + d.tup_updated + d.tup_deleted AS "tuplesWritten"
    FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`);
  return Object.fromEntries(
    Object.entries(rows[0] as Record<string, unknown>).map(([k, v]) => [k, Number(v)]),
  ) as DatabaseWork;
}

/**
 * Whether the cluster keeps pg_stat_statements (it must be in shared_preload_libraries, which needs
 * a restart: a scratch cluster for the bench, not the one the tests use). When it does, each side's
 * database work is also charged to the statements that did it.
 */
async function statementsTracked(db: pg.Client): Promise<boolean> {
  const { rows } = await db.query(`SELECT current_setting('shared_preload_libraries') AS libs`);
  if (!String((rows[0] as { libs: string }).libs).includes('pg_stat_statements')) return false;
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return true;
}

/**
 * This database's statements since the window's reset, the costliest first, per answered request:
 * how often each ran, its time in the executor (wall time: a lock wait counts, and a COMMIT's is
 * its WAL flush), the buffers it touched and the WAL it wrote. The bench's own reads are left out.
 */
async function statementWork(db: pg.Client, requests: number): Promise<string[]> {
  await new Promise((done) => setTimeout(done, 1200));
  const { rows } =
    await db.query(`SELECT regexp_replace(s.query, '\\s+', ' ', 'g') AS query, s.calls, s.total_exec_time AS ms,
      s.shared_blks_hit + s.shared_blks_read AS blocks, s.wal_records, s.wal_bytes
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat%' ORDER BY s.total_exec_time DESC LIMIT 14`);
  const per = (v: unknown) => Number(v) / Math.max(requests, 1);
  return [
    'per request: calls, executor µs (µs per call), buffers, WAL records (bytes) — statement',
    ...rows.map((r: Record<string, unknown>) => {
      const calls = per(r.calls);
      const us = per(r.ms) * 1000;
      return `${calls.toFixed(3)}, ${us.toFixed(1)} (${(us / calls).toFixed(0)}), ${per(r.blocks).toFixed(1)}, ${per(r.wal_records).toFixed(2)} (${per(r.wal_bytes).toFixed(0)}) — ${String(r.query).slice(0, 110)}`;
    }),
  ];
}

const pgUrl = pgUrlFromEnv();
// One scratch database for both sides (the floor's tables are its own), used by one side at a time.
const scratch = pgUrl ? await createScratchDatabase(pgUrl) : null;
const db = scratch ? new pg.Client({ connectionString: scratch.url }) : null;
await db?.connect();
/** Asked once: whether this cluster keeps pg_stat_statements (see statementsTracked). */
const tracked = db ? await statementsTracked(db) : false;
console.log(`${scenario.name}, ${seconds} s${scratch ? ' (PostgreSQL)' : ' (SQLite)'}`);
try {
  const server = await startServer(4710, { ...(scratch ? { SVC_DATABASE_URL: scratch.url } : {}) });
  const { load } = await scenario.setup(server.url).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  const ofServer = await profile('server', server, load, db);
  if (!againstFloor) {
    console.log(summarise(ofServer.script).join('\n'));
    console.log(`\nsamples: ${ofServer.data} (perf report -i ${ofServer.data})`);
  } else {
    const floor = await startFloor(4711, scratch ? { FLOOR_PG_URL: scratch.url } : {});
    const floorName = floorOf(scenario.name);
    // The server's connections (measure's default where it names none) on the floor too: the same load.
    const floorLoad = { ...floorLoads(floor.url)[floorName]!, connections: load.connections };
    console.log(`floor: ${floorName}`);
    const ofFloor = await profile('floor', floor, floorLoad, db);
    const side = (p: Profiled) => ({ tally: tally(p.script), cpuPerRequest: p.cpuPerRequest });
    console.log(['', ...compareToFloor(side(ofServer), side(ofFloor))].join('\n'));
    console.log(`\nsamples: ${ofServer.data}, ${ofFloor.data} (perf report -i FILE)`);
  }
} finally {
  await db?.end();
  await scratch?.drop();
}
