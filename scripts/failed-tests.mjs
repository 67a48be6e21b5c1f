// Prints the failed tests of a vitest JSON report (the path given, or .vitest-report.json), each
// with the first lines of its failure. .ci/run prints this last, so a CI log that keeps only its
// tail still names what failed.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const file = process.argv[2] ?? '.vitest-report.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`failed tests: no report at ${file} (${err.message})`);
  process.exit(0);
}
const failed = [];
for (const result of report.testResults ?? []) {
  const name = relative(process.cwd(), result.name);
  const tests = (result.assertionResults ?? []).filter((t) => t.status === 'failed');
  // A file that failed outside any test (an import error, a hook) has no failed test of its own.
  if (tests.length === 0 && result.status === 'failed')
    failed.push({ name, title: '(the file itself)', messages: [result.message ?? ''] });
  for (const t of tests) failed.push({ name, title: t.fullName ?? t.title, messages: t.failureMessages ?? [] });
}
if (failed.length === 0) {
  console.log('failed tests: none');
  process.exit(0);
}
console.log(`failed tests: ${failed.length}`);
for (const f of failed) {
  console.log(`  ${f.name} > ${f.title}`);
  const lines = f.messages
    .join('\n')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 4);
  for (const line of lines) console.log(`      ${line.trim().slice(0, 200)}`);
}
