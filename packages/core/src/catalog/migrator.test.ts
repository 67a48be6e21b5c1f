import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryCatalog } from '../testing/index.js';
import { migrateCatalog, planCatalogMigration } from './migrator.js';

const STEPS = [1, 2, 3, 4].map((to) => ({ to, statements: [`step ${to}`] }));

describe('client catalog migrator', () => {
  it('walks every missing step in order, from any stamp up to the build', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4 }), async (stamp) => {
        const db = new MemoryCatalog(stamp);
        expect(await migrateCatalog(db, { steps: STEPS, buildVersion: 4 })).toEqual({
          ok: true,
          value: { from: stamp, to: 4 },
        });
        expect(db.applied).toEqual(STEPS.slice(stamp).map((s) => `step ${s.to}`));
        expect(db.version).toBe(4);
      }),
    );
  });
  it('refuses a newer catalog naming both versions, and runs nothing', async () => {
    const db = new MemoryCatalog(6);
    const r = await migrateCatalog(db, { steps: STEPS, buildVersion: 4 });
    expect(r).toMatchObject({
      ok: false,
      code: 'error.catalog.too_new',
      data: { catalog_version: 6, build_version: 4 },
    });
    expect(r.ok ? '' : r.detail).toMatch(/version 6.*version 4/);
    expect(db.applied).toEqual([]);
    expect(db.version).toBe(6);
  });
  it('refuses a build whose steps are not exactly 1..version', () => {
    expect(() => planCatalogMigration(0, 4, STEPS.slice(0, 3))).toThrow(RangeError);
    expect(() => planCatalogMigration(0, 2, [STEPS[1]!, STEPS[0]!])).toThrow(RangeError);
    expect(() => planCatalogMigration(-1, 4, STEPS)).toThrow(RangeError);
  });
});
