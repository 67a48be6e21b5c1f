import Database from 'better-sqlite3';
import {
  migrateCatalog,
  planCatalogMigration,
  type CatalogDatabase,
  type CatalogStep,
  type Result,
} from '@strongroom/core';

/**
 * The client catalog on SQLite: the stamp is `PRAGMA user_version`, and each step runs with its
 * stamp in one transaction.
 */
export class SqliteCatalog implements CatalogDatabase {
  constructor(readonly db: Database.Database) {}
  async readSchemaVersion(): Promise<number> {
    return this.db.pragma('user_version', { simple: true }) as number;
  }
  async applyStep(step: CatalogStep): Promise<void> {
    this.db.transaction(() => {
      for (const statement of step.statements) this.db.exec(statement);
      this.db.pragma(`user_version = ${Math.trunc(step.to)}`);
    })();
  }
}

/**
 * Opens (creating if needed) a catalog file and migrates it to `buildVersion`. The stamp is read
 * first through a read-only handle, so a catalog stamped newer is refused with the file left
 * byte-for-byte as it was.
 */
export async function openCatalog(
  file: string,
  options: { steps: readonly CatalogStep[]; buildVersion: number },
): Promise<Result<Database.Database, 'error.catalog.too_new'>> {
  let probe: Database.Database | null = null;
  try {
    probe = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    probe = null;
  }
  if (probe !== null) {
    const stamp = probe.pragma('user_version', { simple: true }) as number;
    probe.close();
    const plan = planCatalogMigration(stamp, options.buildVersion, options.steps);
    if (!plan.ok) return plan;
  }
  const db = new Database(file);
  const migrated = await migrateCatalog(new SqliteCatalog(db), options);
  if (!migrated.ok) {
    db.close();
    return migrated;
  }
  return { ok: true, value: db };
}
