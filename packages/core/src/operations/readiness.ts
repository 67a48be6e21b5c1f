import { CoreError, ok, refuse, type Result, type StoreFault } from '../errors.js';
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

/** What the adapter reported, or "does not answer" when it could not tell (a bare driver error). */
const faultOf = (e: unknown): StoreFault => (e instanceof CoreError && e.fault !== undefined ? e.fault : 'unreachable');

const DETAIL: Record<'database' | 'blob_store', Record<StoreFault, string>> = {
  database: {
    unreachable: 'The database does not answer.',
    credentials: "The database refuses this server's credentials.",
    failed: 'The database answers with an error.',
  },
  blob_store: {
    unreachable: 'The blob store does not answer.',
    credentials: "The blob store refuses this server's credentials (none found, or not allowed to read the bucket).",
    failed: 'The blob store answers with an error.',
  },
};

/**
 * The readiness decision: the database answers and its schema is current, and the blob store
 * answers; a refusal names the dependency that failed (`dependency`: database or blob_store) and,
 * for a store that failed, why (`reason`: unreachable, credentials or failed), so that refused
 * credentials do not read as an outage. A store that throws is an expected outcome here (that is
 * what the probe is for), so it becomes a refusal, never a throw.
 */
export async function checkReadiness(
  status: SchemaStatus,
  blobs?: Pick<BlobStore, 'has'>,
): Promise<Result<void, 'error.store.unavailable'>> {
  let stamps: SchemaStamps;
  try {
    stamps = await status.readSchemaStamps();
  } catch (e) {
    const reason = faultOf(e);
    return refuse('error.store.unavailable', DETAIL.database[reason], { dependency: 'database', reason });
  }
  if (!schemaIsCurrent(stamps)) {
    return refuse(
      'error.store.unavailable',
      `The database schema is at version ${stamps.database.version}; this build expects version ${stamps.build.version}.`,
      { dependency: 'database', reason: 'schema' },
    );
  }
  if (blobs !== undefined) {
    try {
      await blobs.has(PROBE_HASH);
    } catch (e) {
      // The blobs are half of what the server keeps: without them no upload or download can finish.
      const reason = faultOf(e);
      return refuse('error.store.unavailable', DETAIL.blob_store[reason], { dependency: 'blob_store', reason });
    }
  }
  return ok(undefined);
}
