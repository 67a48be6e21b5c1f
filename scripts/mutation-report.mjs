// Reading Stryker's JSON report: the one definition of a file's score that scripts/mutation-scores.mjs
// prints and scripts/mutation-changed.mjs holds each mutated rule file to.
// Score: killed and timed-out mutants over every mutant that ran or found no test (Stryker's own
// "mutation score"); static mutants a run skipped are left out, as Stryker leaves them out.
import { readFileSync } from 'node:fs';

const DETECTED = new Set(['Killed', 'Timeout']);
const COUNTED = new Set(['Killed', 'Timeout', 'Survived', 'NoCoverage']);

export const readReport = (file = 'reports/mutation/mutation.json') => JSON.parse(readFileSync(file, 'utf8'));

/** A tally's score in percent, or null when no mutant counted. */
export const score = ({ detected, total }) => (total === 0 ? null : (100 * detected) / total);

/** Adds one mutant's status to a tally of detected and counted mutants. */
export function count(tally, status) {
  if (COUNTED.has(status)) tally.total++;
  if (DETECTED.has(status)) tally.detected++;
}

/** Each file of the report with its tally: path to { detected, total }. */
export function fileTallies(report) {
  const tallies = new Map();
  for (const [path, { mutants }] of Object.entries(report.files)) {
    const tally = { detected: 0, total: 0 };
    for (const m of mutants) count(tally, m.status);
    tallies.set(path, tally);
  }
  return tallies;
}
