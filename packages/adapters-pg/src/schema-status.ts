import type { SchemaStamp, SchemaStamps, SchemaStatus } from '@strongroom/core';
import type { PgDb } from './db.js';
import { buildSchemaVersion, databaseSchemaVersion, MIGRATIONS_FOLDER } from './migrate.js';

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
    return { build: this.#build, database: await databaseSchemaVersion(this.db) };
  }
}
