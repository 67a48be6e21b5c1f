import type { SchemaStamps, SchemaStatus } from '../ports/schema-status.js';

/** An in-memory store has no migrations: it is always at the (empty) schema its build ships. */
export class MemorySchemaStatus implements SchemaStatus {
  async readSchemaStamps(): Promise<SchemaStamps> {
    return { build: { version: 0, latestWhen: 0 }, database: { version: 0, latestWhen: 0 } };
  }
}
