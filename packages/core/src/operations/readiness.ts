import { ok, refuse, type Result } from '../errors.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { SchemaStamps, SchemaStatus } from '../ports/schema-status.js';

/** A hash no blob has in practice: asking the blob store whether it holds it shows whether the store answers. */
const PROBE_HASH = '0'.repeat(64);

/**
 * Whether the database's schema is exactly the one this build was written for. Behind (a migration
 * this process expects is missing) or ahead (another process migrated further) both mean this
 * process should not take traffic.
 */
export function schemaIsCurrent(stamps: SchemaStamps): boolean {
  return stamps.database.version === stamps.build.version && stamps.database.latestWhen === stamps.build.latestWhen;
}

/**
 * The readiness decision: the database answers and its schema is current, and the blob store
 * answers; a refusal names the dependency that failed (`dependency`: database or blob_store). A store that throws is
 * an expected outcome here (that is what the probe is for), so it becomes a refusal, never a throw.
 */
export async function checkReadiness(status: SchemaStatus, blobs?: Pick<BlobStore, 'has'>): Promise<Result<void, 'error.store.unavailable'>> {
  let stamps: SchemaStamps;
  try {
    stamps = await status.readSchemaStamps();
  } catch {
    return refuse('error.store.unavailable', 'The database does not answer.', { dependency: 'database' });
  }
  if (!schemaIsCurrent(stamps)) {
    return refuse(
      'error.store.unavailable',
      `The database schema is at version ${stamps.database.version}; this build expects version ${stamps.build.version}.`,
      { dependency: 'database' },
    );
  }
  if (blobs !== undefined) {
    try {
      await blobs.has(PROBE_HASH);
    } catch {
      // The blobs are half of what the server keeps: without them no upload or download can finish.
      return refuse('error.store.unavailable', 'The blob store does not answer.', { dependency: 'blob_store' });
    }
  }
  return ok(undefined);
}
