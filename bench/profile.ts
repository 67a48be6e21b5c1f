/**
 * `node --import tsx bench/profile.ts <scenario> [seconds]`: one scenario against one server started
 * with --cpu-prof (PG when PG_URL is set); prints where the profile is. For finding what to change,
 * not for figures (those come from run.ts).
 */
import { chmodSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measure, setLaunchPrefix, startServer } from './lib.js';
import { scenarioMatching } from './scenarios.js';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';

const wanted = process.argv[2] ?? '';
const seconds = Number(process.argv[3] ?? 8);
/** Another checkout's server instead of this one's (as in ab.ts). */
const root = process.argv[4];
const scenario = scenarioMatching(wanted);
const dir = mkdtempSync(join(tmpdir(), 'strongroom-prof-'));
const pg = pgUrlFromEnv();
const scratch = pg ? await createScratchDatabase(pg) : null;
// Node refuses --cpu-prof in NODE_OPTIONS: a launcher puts it right after the node binary.
const launcher = join(dir, 'node-prof.sh');
writeFileSync(launcher, `#!/bin/sh\nnode="$1"; shift\nexec "$node" --cpu-prof --cpu-prof-dir=${dir} "$@"\n`);
chmodSync(launcher, 0o755);
setLaunchPrefix([launcher]);
const server = await startServer(4700, { ...(scratch ? { SVC_DATABASE_URL: scratch.url } : {}) }, undefined, root);
try {
  const { load } = await scenario.setup(server.url);
  const f = await measure({ ...load, seconds });
  console.log(`${scenario.name}: ${Math.round(f.rps)} req/s, p99 ${f.p99} ms, non-2xx ${f.non2xx}`);
} finally {
  await server.stop();
  await scratch?.drop();
}
console.log(join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile')) ?? '(none)'));
