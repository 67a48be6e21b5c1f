/**
 * `npm run bench:heap -- <scenario words> [seconds]`: one scenario against the server and then its
 * floor (floor-server.ts; the guarded floor for uploads), each sampled by V8's heap profiler while
 * the load runs, after a warm-up (PostgreSQL when PG_URL is set). Prints the bytes each side
 * allocates per answered request, by package and by the functions allocating most beyond the floor.
 *
 * Why beside bench:perf: its profiles charge garbage collection to no JavaScript at all (the
 * collector runs on its own), and on the PostgreSQL upload that is the largest line of the
 * server's CPU beyond its floor. What a request costs the collector grows with what it allocates
 * (and with how much of that outlives a young-generation collection): this says who allocates.
 * The sampler (heap-sampler.mjs) keeps objects already collected, so a short-lived allocation
 * counts as much as one still alive at the end of the window.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, startServer, type Load } from './lib.js';
import { scenarioMatching } from './scenarios.js';
import { floorLoads, floorOf, startFloor } from './floor.js';
import { allocations, compareAllocations, type Allocations, type HeapProfile } from './heap-report.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const [wanted = '', secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 4);
const scenario = scenarioMatching(wanted);
const dir = mkdtempSync(join(tmpdir(), 'strongroom-heap-'));
const sampler = fileURLToPath(new URL('./heap-sampler.mjs', import.meta.url));
const samplerEnv = (side: string) => ({
  NODE_OPTIONS: `--import=${sampler}`,
  HEAP_OUT: join(dir, `${side}.heapprofile`),
});

/** A warm-up, then the load with the sampler on (one SIGUSR2 to start it, one to stop and write). */
async function sample(
  side: 'server' | 'floor',
  proc: { pid: number; stop(): Promise<void> },
  load: Load,
): Promise<Allocations> {
  const file = samplerEnv(side).HEAP_OUT;
  try {
    await measure({ ...load, seconds: 3 });
    process.kill(proc.pid, 'SIGUSR2');
    await new Promise((done) => setTimeout(done, 200));
    const f = await measure({ ...load, seconds });
    process.kill(proc.pid, 'SIGUSR2');
    for (let i = 0; i < 150 && !existsSync(file); i++) await new Promise((done) => setTimeout(done, 200));
    // The file appears as its write begins: give the write time to end.
    await new Promise((done) => setTimeout(done, 1500));
    console.log(`${side}: ${Math.round(f.rps)} req/s while sampled, non-2xx ${f.non2xx}`);
    return allocations(JSON.parse(readFileSync(file, 'utf8')) as HeapProfile, f.ok);
  } finally {
    await proc.stop();
  }
}

const pgUrl = pgUrlFromEnv();
const scratch = pgUrl ? await createScratchDatabase(pgUrl) : null;
console.log(`${scenario.name}, ${seconds} s${scratch ? ' (PostgreSQL)' : ' (SQLite)'}`);
try {
  const server = await startServer(4720, {
    ...(scratch ? { SVC_DATABASE_URL: scratch.url } : {}),
    ...samplerEnv('server'),
  });
  const { load } = await scenario.setup(server.url).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  const ofServer = await sample('server', server, load);
  const floor = await startFloor(4721, { ...(scratch ? { FLOOR_PG_URL: scratch.url } : {}), ...samplerEnv('floor') });
  const floorName = floorOf(scenario.name);
  console.log(`floor: ${floorName}`);
  const ofFloor = await sample('floor', floor, { ...floorLoads(floor.url)[floorName]!, connections: load.connections });
  console.log(['', ...compareAllocations(ofServer, ofFloor)].join('\n'));
  console.log(`\nprofiles: ${dir} (open a .heapprofile in Chrome's DevTools, Memory tab)`);
} finally {
  await scratch?.drop();
}
