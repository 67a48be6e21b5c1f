import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openCatalog } from './catalog.js';

const STEPS = [
  { to: 1, statements: ['CREATE TABLE assets (id TEXT PRIMARY KEY, taken_at INTEGER)'] },
  { to: 2, statements: ['ALTER TABLE assets ADD COLUMN caption TEXT', "UPDATE assets SET caption = ''"] },
  { to: 3, statements: ['CREATE INDEX assets_taken_idx ON assets (taken_at)'] },
];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'catalog-'));
  dirs.push(dir);
  return { dir, file: join(dir, 'catalog.db') };
};
const hashDir = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [
        f,
        createHash('sha256')
          .update(readFileSync(join(dir, f)))
          .digest('hex'),
      ]),
  );

describe('client catalog on a real SQLite file', () => {
  it("migrates stepwise, forward only, keyed on the file's own stamp", async () => {
    const { file } = tempFile();
    const v1 = await openCatalog(file, { steps: STEPS.slice(0, 1), buildVersion: 1 });
    if (!v1.ok) throw new Error(v1.detail);
    v1.value.prepare('INSERT INTO assets VALUES (?, ?)').run('a', 5);
    v1.value.close();
    const v3 = await openCatalog(file, { steps: STEPS, buildVersion: 3 });
    if (!v3.ok) throw new Error(v3.detail);
    expect(v3.value.pragma('user_version', { simple: true })).toBe(3);
    expect(v3.value.prepare('SELECT id, caption FROM assets').all()).toEqual([{ id: 'a', caption: '' }]);
    v3.value.close();
  });

  it('refuses a catalog stamped newer, naming both versions, and leaves the file byte-for-byte untouched', async () => {
    const { dir, file } = tempFile();
    const v3 = await openCatalog(file, { steps: STEPS, buildVersion: 3 });
    if (!v3.ok) throw new Error(v3.detail);
    v3.value.prepare('INSERT INTO assets VALUES (?, ?, ?)').run('b', 7, 'hi');
    v3.value.close();
    const before = hashDir(dir);
    const old = await openCatalog(file, { steps: STEPS.slice(0, 2), buildVersion: 2 });
    expect(old).toMatchObject({
      ok: false,
      code: 'error.catalog.too_new',
      data: { catalog_version: 3, build_version: 2 },
    });
    expect(old.ok ? '' : old.detail).toMatch(/schema version 3.*version 2/);
    expect(hashDir(dir)).toEqual(before);
  });
});
