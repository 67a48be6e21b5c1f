// Prints the ten slowest test files of a vitest JSON report (the path given, or .vitest-report.json),
// so a CI log shows where the suite's time goes.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const file = process.argv[2] ?? '.vitest-report.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`slowest tests: no report at ${file} (${err.message})`);
  process.exit(0);
}
const files = (report.testResults ?? [])
  .map((r) => ({ name: relative(process.cwd(), r.name), ms: (r.endTime ?? 0) - (r.startTime ?? 0) }))
  .sort((a, b) => b.ms - a.ms)
  .slice(0, 10);
console.log('The ten slowest test files:');
for (const f of files) console.log(`${(f.ms / 1000).toFixed(1).padStart(8)} s  ${f.name}`);
