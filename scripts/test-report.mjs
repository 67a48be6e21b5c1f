// Reads a vitest JSON report (.ci/run writes .vitest-report.json) and prints one of two views, so a
// CI log shows where the suite's time went and, at its very end, what failed:
//   node scripts/test-report.mjs slowest [report]   the ten slowest test files
//   node scripts/test-report.mjs failed [report]    each failed test, with the first lines of its failure
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [view = 'slowest', file = '.vitest-report.json'] = process.argv.slice(2);
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`test report: none at ${file} (${err.message})`);
  process.exit(0);
}
const results = (report.testResults ?? []).map((r) => ({ ...r, name: relative(process.cwd(), r.name) }));

if (view === 'slowest') {
  const files = results
    .map((r) => ({ name: r.name, ms: (r.endTime ?? 0) - (r.startTime ?? 0) }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10);
  console.log('The ten slowest test files:');
  for (const f of files) console.log(`${(f.ms / 1000).toFixed(1).padStart(8)} s  ${f.name}`);
} else if (view === 'failed') {
  const failed = [];
  for (const result of results) {
    const tests = (result.assertionResults ?? []).filter((t) => t.status === 'failed');
    // A file that failed outside any test (an import error, a hook) has no failed test of its own.
    if (tests.length === 0 && result.status === 'failed')
      failed.push({ name: result.name, title: '(the file itself)', messages: [result.message ?? ''] });
    for (const t of tests)
      failed.push({ name: result.name, title: t.fullName ?? t.title, messages: t.failureMessages ?? [] });
  }
  console.log(`failed tests: ${failed.length === 0 ? 'none' : failed.length}`);
  for (const f of failed) {
    console.log(`  ${f.name} > ${f.title}`);
    const lines = f.messages
      .join('\n')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(0, 4);
    for (const line of lines) console.log(`      ${line.trim().slice(0, 200)}`);
  }
} else {
  console.error(`test report: no view "${view}" (slowest or failed)`);
  process.exit(2);
}
