/** One forward step of the client catalog's schema: from `to - 1` to `to`. */
export interface CatalogStep {
  readonly to: number;
  /** The DDL/DML of the step, run in order. */
  readonly statements: readonly string[];
}

/** The client's local catalog database, as far as its migrator needs it. */
export interface CatalogDatabase {
  /** The catalog's own schema stamp; 0 for a new, empty catalog. Reading changes nothing. */
  readSchemaVersion(): Promise<number>;
  /** Runs the step and stamps `step.to`, all or nothing. */
  applyStep(step: CatalogStep): Promise<void>;
}
