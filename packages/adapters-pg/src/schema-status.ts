import { CoreError, type SchemaStamp, type SchemaStamps, type SchemaStatus, type StoreFault } from '@strongroom/core';
import type { PgDb } from './db.js';
import { buildSchemaVersion, databaseSchemaVersion, MIGRATIONS_FOLDER } from './migrate.js';

/**
 * What a failed round trip says about the server: an answer with SQLSTATE class 28 (invalid
 * authorization: a wrong password, a role pg_hba.conf turns away) refuses these credentials; any
 * other SQLSTATE is an answer with an error; no SQLSTATE at all (refused, reset, timed out,
 * unknown host, the pool's connect timeout) is no answer.
 */
export function pgFault(e: unknown): StoreFault {
  // Drizzle wraps the driver's error; the SQLSTATE is on the innermost one.
  let err = e as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; depth < 4 && err !== undefined && err !== null; depth++) {
    if (typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code))
      return err.code.startsWith('28') ? 'credentials' : 'failed';
    err = err.cause as typeof err;
  }
  return 'unreachable';
}

/** Reads the applied migrations over the pool (a real round trip); the build's stamp is read once. */
export class PgSchemaStatus implements SchemaStatus {
  readonly #build: SchemaStamp;
  constructor(
    private readonly db: PgDb,
    migrationsFolder = MIGRATIONS_FOLDER,
  ) {
    this.#build = buildSchemaVersion(migrationsFolder);
  }

  async readSchemaStamps(): Promise<SchemaStamps> {
    try {
      return { build: this.#build, database: await databaseSchemaVersion(this.db) };
    } catch (cause) {
      throw new CoreError('error.store.unavailable', 'reading the applied migrations failed', {
        cause,
        fault: pgFault(cause),
      });
    }
  }
}
