import { ok, refuse, type Result } from '../errors.js';
import type { SchemaStamps, SchemaStatus } from '../ports/schema-status.js';

/**
 * Whether the database's schema is exactly the one this build was written for. Behind (a migration
 * this process expects is missing) or ahead (another process migrated further) both mean this
 * process should not take traffic.
 */
export function schemaIsCurrent(stamps: SchemaStamps): boolean {
  return stamps.database.version === stamps.build.version && stamps.database.latestWhen === stamps.build.latestWhen;
}

/**
 * The readiness decision: the database answers and its schema is current. A store that throws is
 * an expected outcome here (that is what the probe is for), so it becomes a refusal, never a throw.
 */
export async function checkReadiness(status: SchemaStatus): Promise<Result<void, 'error.store.unavailable'>> {
  let stamps: SchemaStamps;
  try {
    stamps = await status.readSchemaStamps();
  } catch {
    return refuse('error.store.unavailable', 'The database does not answer.');
  }
  if (!schemaIsCurrent(stamps)) {
    return refuse(
      'error.store.unavailable',
      `The database schema is at version ${stamps.database.version}; this build expects version ${stamps.build.version}.`,
    );
  }
  return ok(undefined);
}
