import type { SchemaStamp } from '../versioning/schema.js';

/** The two schema stamps readiness compares: what this build ships and what the database has applied. */
export interface SchemaStamps {
  readonly build: SchemaStamp;
  readonly database: SchemaStamp;
}

/**
 * The database's schema as it is now, for the readiness probe. Each call makes a real round trip
 * (so a database that stopped answering makes it throw); it never creates or migrates anything.
 */
export interface SchemaStatus {
  readSchemaStamps(): Promise<SchemaStamps>;
}
