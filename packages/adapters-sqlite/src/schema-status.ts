import type Database from 'better-sqlite3';
import type { SchemaStamp, SchemaStamps, SchemaStatus } from '@strongroom/core';
import { buildSchemaVersion, databaseSchemaVersion, MIGRATIONS_FOLDER } from './migrate.js';

/** Reads the applied migrations from the open database; the build's stamp is read once, at creation. */
export class SqliteSchemaStatus implements SchemaStatus {
  readonly #build: SchemaStamp;
  constructor(
    private readonly db: Database.Database,
    migrationsFolder = MIGRATIONS_FOLDER,
  ) {
    this.#build = buildSchemaVersion(migrationsFolder);
  }

  async readSchemaStamps(): Promise<SchemaStamps> {
    return { build: this.#build, database: databaseSchemaVersion(this.db) };
  }
}
