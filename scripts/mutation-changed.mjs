// Mutation testing over the rule files a change touches: the rule files that differ from the merge
// base with main (committed or not), and those beside a test file that differs (a weakened test
// lowers its rule file's score). Nothing to mutate: says so and succeeds. `--list` prints the files
// and stops; other arguments go to Stryker (`npm run mutation:changed -- --concurrency 1`).
//
// The base is MUTATION_BASE when set, else the first of origin/main and main that exists. A clone
// with neither (or on main itself) compares with the commit before HEAD.
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { ruleFiles } from '../stryker.config.mjs';

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
const tryGit = (...args) => {
  try {
    return git(...args);
  } catch {
    return null;
  }
};

function mergeBase() {
  const head = tryGit('rev-parse', 'HEAD');
  for (const ref of [process.env.MUTATION_BASE, 'origin/main', 'main']) {
    if (!ref) continue;
    const base = tryGit('merge-base', 'HEAD', ref);
    if (base !== null && base !== head) return base;
  }
  return tryGit('rev-parse', 'HEAD~1');
}

const base = mergeBase();
if (base === null) {
  console.log('mutation:changed: no commit to compare with; nothing to mutate.');
  process.exit(0);
}
const changed = new Set(
  [
    ...git('diff', '--name-only', '--diff-filter=d', base).split('\n'),
    ...git('ls-files', '--others', '--exclude-standard').split('\n'),
  ].filter(Boolean),
);
const testedFolders = new Set([...changed].filter((f) => f.endsWith('.test.ts')).map(dirname));
const mutate = ruleFiles.filter((f) => changed.has(f) || testedFolders.has(dirname(f)));

if (mutate.length === 0) {
  console.log(`mutation:changed: no rule file changed since ${base.slice(0, 12)}; nothing to mutate.`);
  process.exit(0);
}
console.log(`mutation:changed: since ${base.slice(0, 12)}: ${mutate.join(', ')}`);
const args = process.argv.slice(2);
if (args.includes('--list')) process.exit(0);
const started = Date.now();
const run = spawnSync('npx', ['stryker', 'run', '--mutate', mutate.join(','), ...args], {
  stdio: 'inherit',
});
console.log(`mutation:changed: ${mutate.length} file(s) in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(run.status ?? 1);
