import type { CatalogDatabase, CatalogStep } from '../ports/catalog.js';

/** An in-memory catalog: the stamp plus the statements it has run, for tests of the migrator. */
export class MemoryCatalog implements CatalogDatabase {
  readonly applied: string[] = [];
  constructor(public version = 0) {}
  async readSchemaVersion(): Promise<number> {
    return this.version;
  }
  async applyStep(step: CatalogStep): Promise<void> {
    if (step.to !== this.version + 1) throw new Error(`step to ${step.to} applied at version ${this.version}`);
    this.applied.push(...step.statements);
    this.version = step.to;
  }
}
