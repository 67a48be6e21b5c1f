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
 * Needs `perf` (Debian: linux-perf) and permission to sample the process (root, or
 * kernel.perf_event_paranoid <= 1). The raw samples stay in the printed directory for `perf report`.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { measure, setLaunchPrefix, startServer } from './lib.js';
import { SCENARIOS } from './scenarios.js';
import { latestPerfMap, summarise } from './perf-report.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const wanted = process.argv[2] ?? '';
const seconds = Number(process.argv[3] ?? 8);
const scenario = SCENARIOS.find((s) => s.name.toLowerCase().includes(wanted.toLowerCase()));
if (!scenario) throw new Error(`no scenario matches "${wanted}": ${SCENARIOS.map((s) => s.name).join(' | ')}`);
await promisify(execFile)('perf', ['--version']).catch(() => {
  throw new Error('bench:perf needs Linux perf on the PATH (Debian: apt-get install linux-perf)');
});

const dir = mkdtempSync(join(tmpdir(), 'strongroom-perf-'));
const data = join(dir, 'perf.data');
// Node refuses V8 flags of this kind in NODE_OPTIONS: a launcher puts it right after the node binary.
const launcher = join(dir, 'node-perf.sh');
writeFileSync(launcher, `#!/bin/sh\nnode="$1"; shift\nexec "$node" --perf-basic-prof-only-functions "$@"\n`);
chmodSync(launcher, 0o755);
setLaunchPrefix([launcher]);

const pg = pgUrlFromEnv();
const scratch = pg ? await createScratchDatabase(pg) : null;
const server = await startServer(4710, { ...(scratch ? { SVC_DATABASE_URL: scratch.url } : {}) });
const serverPid = server.pid;
try {
  const { load } = await scenario.setup(server.url);
  // Past the warm-up the optimizing compiler has mostly settled; its later work is still counted.
  await measure({ ...load, seconds: 3 });
  const recorder = spawn('perf', ['record', '-F', '1999', '-g', '-p', String(server.pid), '-o', data, '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const recorded = new Promise<number | null>((done) => recorder.on('exit', done));
  const f = await measure({ ...load, seconds });
  if ((await recorded) !== 0) throw new Error('perf record failed (permissions? see kernel.perf_event_paranoid)');
  console.log(`${scenario.name}: ${Math.round(f.rps)} req/s, p99 ${f.p99} ms, non-2xx ${f.non2xx}${scratch ? ' (PostgreSQL)' : ' (SQLite)'}`);
} finally {
  await server.stop();
  await scratch?.drop();
}
// perf reads V8's map of the process's code when it names the samples: the latest name for each address.
const map = `/tmp/perf-${serverPid}.map`;
if (existsSync(map)) writeFileSync(map, latestPerfMap(readFileSync(map, 'utf8')));
const { stdout } = await promisify(execFile)('perf', ['script', '-i', data], { maxBuffer: 1 << 30 });
console.log(summarise(stdout).join('\n'));
console.log(`\nsamples: ${data} (perf report -i ${data})`);
