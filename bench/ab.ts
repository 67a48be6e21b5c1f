/**
 * `npm run bench:ab -- <other checkout> [scenario words]`: the same scenario against this checkout's
 * server and another checkout's (an earlier commit with its own node_modules), in alternating
 * rounds, with the bare route between them. For "did this change cost the hot path anything":
 * both servers run at the same moment on the same cores, so the machine's drift hits both alike.
 * SQLite (the store each server makes for itself), or with AB_STORE=pg and PG_URL set, PostgreSQL (a
 * scratch database for each side). BENCH_ROUNDS and BENCH_SECONDS as in run.ts.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pgClient from 'pg';
import {
  backendCpu,
  backendDelta,
  cpuMicros,
  measure,
  setLaunchPrefix,
  startBare,
  startServer,
  median,
} from './lib.js';
import { pinCores } from './pinning.js';
import { scenarioMatching } from './scenarios.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const other = process.argv[2];
if (!other || !existsSync(join(other, 'apps/server/src/main.ts')))
  throw new Error('usage: bench/ab.ts <other checkout with node_modules> [scenario words]');
const wanted = (process.argv[3] ?? 'profile').toLowerCase();
const scenario = scenarioMatching(wanted);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);

const pin = pinCores();
setLaunchPrefix(pin.serverPrefix);
console.log(pin.description);
const bare = await startBare(4790);
const pg = process.env.AB_STORE === 'pg' ? pgUrlFromEnv() : null;
if (process.env.AB_STORE === 'pg' && !pg) throw new Error('AB_STORE=pg needs PG_URL');
const scratch = pg ? [await createScratchDatabase(pg), await createScratchDatabase(pg)] : null;
// SQLite unless AB_STORE=pg: then each side gets a fresh database of its own.
const store = (i: number) => ({ SVC_DATABASE_URL: scratch ? scratch[i]!.url : '' });
console.log(`store: ${scratch ? 'postgresql' : 'sqlite'}`);
const here = await startServer(4791, store(0));
// A connection to each side's database, to read its backends' CPU (lib.ts backendCpu).
const watchers = scratch
  ? await Promise.all(
      scratch.map(async (d) => {
        const c = new pgClient.Client(d.url);
        await c.connect();
        return c;
      }),
    )
  : null;
const there = await startServer(4792, store(1), undefined, resolve(other));
try {
  const loads = { here: (await scenario.setup(here.url)).load, there: (await scenario.setup(there.url)).load };
  await measure({ url: `${bare.url}/bare`, seconds: 2 });
  for (const l of Object.values(loads)) await measure({ ...l, seconds: 2 });
  const ratios: Record<'here' | 'there', number[]> = { here: [], there: [] };
  const rps: Record<'here' | 'there', number[]> = { here: [], there: [] };
  const cpu: Record<'here' | 'there', number[]> = { here: [], there: [] };
  const p99: Record<'here' | 'there', number[]> = { here: [], there: [] };
  // On PostgreSQL, each side's database backends too: a change in SQL can move CPU from the server
  // to the database, or save it there, where the server's figure cannot see it.
  const dbCpu: Record<'here' | 'there', number[]> = { here: [], there: [] };
  const servers = { here, there };
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so neither always runs on the warmer machine.
    for (const side of i % 2 === 0 ? (['here', 'there'] as const) : (['there', 'here'] as const)) {
      const b = await measure({ url: `${bare.url}/bare`, seconds: SECONDS });
      const client = watchers?.[side === 'here' ? 0 : 1];
      const dbBefore = client ? await backendCpu(client) : null;
      const before = cpuMicros(servers[side].pid);
      const r = await measure({ ...loads[side], seconds: SECONDS });
      const after = cpuMicros(servers[side].pid);
      if (before !== null && after !== null && r.ok > 0) cpu[side].push((after - before) / r.ok);
      if (client && dbBefore && r.ok > 0) dbCpu[side].push(backendDelta(dbBefore, await backendCpu(client)) / r.ok);
      ratios[side].push(r.rps / b.rps);
      rps[side].push(r.rps);
      p99[side].push(r.p99);
    }
  }
  console.log(`${scenario.name}: ${ROUNDS} alternating rounds of ${SECONDS} s, each after a bare-route run`);
  for (const side of ['here', 'there'] as const) {
    const label = side === 'here' ? 'this checkout ' : `${other}`;
    console.log(
      `${label.padEnd(24)} median ${Math.round(median(rps[side]))} req/s, ratio ${(median(ratios[side]) * 100).toFixed(1)} % ` +
        `(rounds: ${ratios[side].map((x) => (x * 100).toFixed(1)).join(' ')}; req/s: ${rps[side].map((x) => Math.round(x)).join(' ')})` +
        (cpu[side].length > 0
          ? `; server CPU per request: median ${median(cpu[side]).toFixed(1)} µs (${cpu[side].map((x) => x.toFixed(1)).join(' ')})`
          : '') +
        (dbCpu[side].length > 0
          ? `; database backends' CPU per request: median ${median(dbCpu[side]).toFixed(1)} µs (${dbCpu[side].map((x) => x.toFixed(1)).join(' ')})`
          : '') +
        `; p99 ms: ${p99[side].join(' ')}`,
    );
  }
} finally {
  for (const c of watchers ?? []) await c.end();
  await Promise.all([here.stop(), there.stop(), bare.stop()]);
  for (const d of scratch ?? []) await d.drop();
}
