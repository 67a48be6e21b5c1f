import { sql } from 'drizzle-orm';
import type { PgDb } from './db.js';
import { rowsOf } from './db.js';

/**
 * What a backup on PostgreSQL needs from the live database (the database itself is copied by
 * `pg_dump`): the blobs the ledger references, and the deployment's key fingerprint, so the backup
 * can refuse a key that is not the one the database's secrets are sealed under.
 */
export async function readPgLedgerForBackup(
  db: PgDb,
): Promise<{ blobs: { contentHash: string; size: number }[]; keyFingerprint: string | null }> {
  const blobs = await rowsOf<{ content_hash: string; size: string | number }>(
    db,
    sql`SELECT content_hash, size FROM blobs ORDER BY content_hash`,
  );
  const [dep] = await rowsOf<{ key_fingerprint: string }>(db, sql`SELECT key_fingerprint FROM deployment WHERE id = 1`);
  return {
    blobs: blobs.map((b) => ({ contentHash: b.content_hash, size: Number(b.size) })),
    keyFingerprint: dep?.key_fingerprint ?? null,
  };
}

/**
 * Runs `dump` while one read-only REPEATABLE READ transaction holds an exported snapshot, and
 * hands it that snapshot's id and the ledger read in it. `pg_dump --snapshot=<id>` then dumps
 * exactly the database this ledger came from, so the blobs copied from it are the blobs the dump's
 * ledger references: none missing, however the server writes meanwhile (PostgreSQL's documented
 * way to make several dumps, or a dump and other reads, agree).
 */
export async function withPgBackupSnapshot<T>(
  db: PgDb,
  dump: (snapshot: string, ledger: Awaited<ReturnType<typeof readPgLedgerForBackup>>) => Promise<T>,
): Promise<T> {
  return db.transaction(
    async (tx) => {
      const [row] = await rowsOf<{ id: string }>(tx as unknown as PgDb, sql`SELECT pg_export_snapshot() AS id`);
      const ledger = await readPgLedgerForBackup(tx as unknown as PgDb);
      return dump(row!.id, ledger);
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
