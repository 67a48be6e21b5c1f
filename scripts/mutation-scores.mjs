// Prints the mutation score of each rule file and each core folder from Stryker's JSON report
// (the path given, or reports/mutation/mutation.json) as a Markdown table, then every surviving or
// uncovered mutant, so docs/mutation.md can be brought up to date from a run.
// The score is scripts/mutation-report.mjs's.
import { dirname } from 'node:path';
import { count, readReport, score } from './mutation-report.mjs';

const report = readReport(process.argv[2]);

const tally = new Map();
const add = (key, status) => {
  const t = tally.get(key) ?? { detected: 0, total: 0 };
  count(t, status);
  tally.set(key, t);
};
const survivors = [];
for (const [path, { mutants, source }] of Object.entries(report.files)) {
  const lines = source.split('\n');
  for (const m of mutants) {
    add(path, m.status);
    add(`${dirname(path)}/`, m.status);
    add('all', m.status);
    if (m.status === 'Survived' || m.status === 'NoCoverage') {
      const { line, column } = m.location.start;
      const original = lines[line - 1]?.trim() ?? '';
      survivors.push(`${path}:${line}:${column} ${m.status} ${m.mutatorName}: ${m.replacement ?? ''}  [${original}]`);
    }
  }
}
const pct = (t) => (t.total === 0 ? 'n/a' : `${score(t).toFixed(1)} %`);
console.log('| File or folder | Killed | Mutants | Score |');
console.log('| --- | ---: | ---: | ---: |');
for (const [key, t] of [...tally].sort(([a], [b]) => a.localeCompare(b)))
  console.log(`| \`${key}\` | ${t.detected} | ${t.total} | ${pct(t)} |`);
console.log(`\n${survivors.length} surviving or uncovered:`);
for (const s of survivors) console.log(s);
