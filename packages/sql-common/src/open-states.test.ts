import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UPLOAD_STATES } from '@strongroom/core';
import { OPEN_STATES } from '@strongroom/core/internal';
import { OPEN_STATE_SQL, sqlStringList } from './index.js';

const packages = fileURLToPath(new URL('../..', import.meta.url));

/** The adapters' store sources: the schema files are the one documented exception (drizzle-kit). */
function storeSources(): { file: string; text: string }[] {
  return ['adapters-sqlite', 'adapters-pg'].flatMap((pkg) => {
    const dir = join(packages, pkg, 'src');
    return readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => ({ file: `${pkg}/src/${f}`, text: readFileSync(join(dir, f), 'utf8') }));
  });
}

describe('the in-flight predicate, once', () => {
  it('OPEN_STATE_SQL is core’s OPEN_STATES as an SQL list', () => {
    expect(OPEN_STATE_SQL).toBe(sqlStringList(OPEN_STATES));
    expect(OPEN_STATE_SQL).toBe("('Pending', 'Uploading', 'WaitingForProcessing')");
  });

  it('no store spells an upload state inside an SQL list of its own', () => {
    // A list such as ('Pending', 'Uploading', ...) or IN ('Pending') restates core's predicate.
    const names = UPLOAD_STATES.join('|');
    const list = new RegExp(`\\(\\s*'(?:${names})'\\s*[,)]`);
    const offenders = storeSources()
      .filter((s) => list.test(s.text))
      .map((s) => s.file);
    expect(offenders).toEqual([]);
  });
});
