// Mutation testing over the rule files a change touches: the rule files that differ from the merge
// base with main (committed or not), and those beside a test file that differs (a weakened test
// lowers its rule file's score). Nothing to mutate: says so and succeeds. `--list` prints the files
// and stops; other arguments go to Stryker (`npm run mutation:changed -- --concurrency 1`).
//
// It fails when Stryker fails, and when any file it mutated scores below `fileScoreFloor`
// (stryker.config.mjs), each file judged on its own from Stryker's JSON report.
//
// The base is MUTATION_BASE when set, else the first of origin/main and main that exists. A clone
// with neither (or on main itself) compares with the commit before HEAD.
import { execFileSync, spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import config, { fileScoreFloor, ruleFiles } from '../stryker.config.mjs';
import { fileTallies, readReport, score } from './mutation-report.mjs';

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
if (run.status !== 0) process.exit(run.status ?? 1);

// A report older than this run is a previous run's: judging it would pass a change nobody measured.
const reportFile = config.jsonReporter.fileName;
if ((statSync(reportFile, { throwIfNoEntry: false })?.mtimeMs ?? 0) < started) {
  console.log(`mutation:changed: Stryker wrote no report to ${reportFile}; cannot judge the scores.`);
  process.exit(1);
}
const tallies = fileTallies(readReport(reportFile));
let below = 0;
for (const file of mutate) {
  const tally = tallies.get(file) ?? { detected: 0, total: 0 };
  const s = score(tally);
  const ok = s === null || s >= fileScoreFloor;
  if (!ok) below++;
  const shown = s === null ? 'no mutant' : `${tally.detected} of ${tally.total}, ${s.toFixed(1)} %`;
  console.log(`mutation:changed: ${ok ? 'ok   ' : 'BELOW'} ${file}: ${shown}`);
}
if (below > 0) {
  console.log(
    `mutation:changed: ${below} file(s) below ${fileScoreFloor} %: kill the survivors with a test, or explain ` +
      'in docs/mutation.md why they are equivalent (node scripts/mutation-scores.mjs lists them).',
  );
  process.exit(1);
}
