/**
 * Server data structures migrate forward only (spec §14.13). The stores' adapters read two stamps
 * (what this build ships, what the database has applied) and ask these functions what to do, so
 * every adapter refuses the same cases with the same words.
 */

/** How many migrations, and the newest one's timestamp. */
export interface SchemaStamp {
  readonly version: number;
  readonly latestWhen: number;
}

/** The schema cannot be brought to this build's version; the server must not start. */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError';
  constructor(
    message: string,
    readonly databaseVersion: number,
    readonly buildVersion: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Opening an existing deployment found none: the database is absent, or holds no schema. Nothing
 * was created, migrated or otherwise changed.
 */
export class NoDeploymentError extends Error {
  override readonly name = 'NoDeploymentError';
}

/**
 * For a caller that works on an existing deployment only (an operator command): a database that
 * holds no schema is refused before anything is written to it, instead of being initialised.
 */
export function refuseAbsentSchema(database: SchemaStamp): NoDeploymentError | null {
  if (database.version > 0) return null;
  return new NoDeploymentError('the database holds no schema');
}

/** A build's stamp from its migration journal entries. */
export function stampOf(entries: readonly { when: number }[]): SchemaStamp {
  return { version: entries.length, latestWhen: Math.max(0, ...entries.map((e) => e.when)) };
}

/** The refusal for a database stamped newer than the build, or null when migrating may go ahead. */
export function refuseNewerSchema(database: SchemaStamp, build: SchemaStamp): SchemaVersionError | null {
  if (database.version <= build.version && database.latestWhen <= build.latestWhen) return null;
  return new SchemaVersionError(
    `database schema version ${database.version} is newer than this build's schema version ${build.version}; ` +
      'update the server. The database was not changed.',
    database.version,
    build.version,
  );
}

/** The error for a migration that failed (and was rolled back whole). */
export function migrationFailed(fromVersion: number, build: SchemaStamp, cause: unknown): SchemaVersionError {
  return new SchemaVersionError(
    `migrating the database from schema version ${fromVersion} to ${build.version} failed; nothing was changed: ${(cause as Error)?.message ?? String(cause)}`,
    fromVersion,
    build.version,
    { cause },
  );
}
