import { guard, ok, refuse, type Result } from '../errors.js';
import type { CatalogDatabase, CatalogStep } from '../ports/catalog.js';

/**
 * The client catalog migrator (spec §14.14): forward-only, keyed on the catalog's own stamp, one
 * step per version walked in order. A catalog stamped above the build is refused naming both
 * versions and is not touched at all (no stamp rewrite, no DDL).
 */

/** Which steps take a catalog at `stamp` to `buildVersion`. Steps must be exactly 1..buildVersion. */
export function planCatalogMigration(
  stamp: number,
  buildVersion: number,
  steps: readonly CatalogStep[],
): Result<CatalogStep[], 'error.catalog.too_new'> {
  steps.forEach((s, i) => {
    if (s.to !== i + 1) throw new RangeError(`catalog step ${i} must migrate to version ${i + 1}, not ${s.to}`);
  });
  if (steps.length !== buildVersion)
    throw new RangeError(`this build is catalog version ${buildVersion} but ships ${steps.length} steps`);
  if (!Number.isSafeInteger(stamp) || stamp < 0) throw new RangeError(`catalog stamp ${stamp} is not a version`);
  if (stamp > buildVersion) {
    return refuse(
      'error.catalog.too_new',
      `This catalog is at schema version ${stamp}, newer than this app's version ${buildVersion}. Update the app; the catalog was not changed.`,
      { catalog_version: stamp, build_version: buildVersion },
    );
  }
  return ok(steps.slice(stamp));
}

/** Reads the stamp, refuses a newer catalog untouched, else applies each missing step in order. */
export async function migrateCatalog(
  db: CatalogDatabase,
  options: { steps: readonly CatalogStep[]; buildVersion: number },
): Promise<Result<{ from: number; to: number }, 'error.catalog.too_new'>> {
  const stamp = await guard('error.store.unavailable', 'reading the catalog version', () => db.readSchemaVersion());
  const plan = planCatalogMigration(stamp, options.buildVersion, options.steps);
  if (!plan.ok) return plan;
  for (const step of plan.value) {
    await guard('error.store.unavailable', `migrating the catalog to version ${step.to}`, () => db.applyStep(step));
  }
  return ok({ from: stamp, to: options.buildVersion });
}
