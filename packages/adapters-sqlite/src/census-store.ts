import type Database from 'better-sqlite3';
import { asc, gt } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { AccountRecord, CensusBounds, CensusCounts, DeploymentCensus } from '@strongroom/core';
import { accountFromRow, OPEN_STATE_SQL } from '@strongroom/sql-common';
import { accounts } from './schema/index.js';

type CountsRow = {
  accounts: number;
  open_sessions: number;
  charged: number;
  reserved: number;
  open_uploads: number;
  blobs: number;
  blob_bytes: number;
};

/**
 * Every account and the deployment's totals over SQLite. The counts are one statement (one
 * snapshot); "open" is the bounds core computed (operator/census.ts), applied as they are.
 */
export class SqliteDeploymentCensus implements DeploymentCensus {
  readonly #db: BetterSQLite3Database;
  readonly #counts: Database.Statement<[{ created: number; refreshed: number; now: number }], CountsRow>;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
    this.#counts = sqlite.prepare(
      `SELECT (SELECT count(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
              (SELECT count(*) FROM sessions WHERE closed_at IS NULL AND created_at > @created AND refreshed_at > @refreshed) AS open_sessions,
              (SELECT coalesce(sum(charged), 0) FROM quota_accounts) AS charged,
              (SELECT coalesce(sum(declared_size), 0) FROM upload_sessions WHERE state IN ${OPEN_STATE_SQL} AND expires_at > @now) AS reserved,
              (SELECT count(*) FROM upload_sessions WHERE state IN ${OPEN_STATE_SQL} AND expires_at > @now) AS open_uploads,
              (SELECT count(*) FROM blobs) AS blobs,
              (SELECT coalesce(sum(size), 0) FROM blobs) AS blob_bytes`,
    );
  }

  async listAccounts(after: string | null, limit: number): Promise<AccountRecord[]> {
    const q = this.#db.select().from(accounts);
    return (after === null ? q : q.where(gt(accounts.id, after)))
      .orderBy(asc(accounts.id))
      .limit(limit)
      .all()
      .map(accountFromRow);
  }

  async countDeployment(bounds: CensusBounds): Promise<CensusCounts> {
    const r = this.#counts.get({
      created: bounds.sessionsCreatedAfter,
      refreshed: bounds.sessionsRefreshedAfter,
      now: bounds.now,
    })!;
    return {
      accounts: r.accounts,
      openSessions: r.open_sessions,
      charged: r.charged,
      reserved: r.reserved,
      openUploads: r.open_uploads,
      blobs: r.blobs,
      blobBytes: r.blob_bytes,
    };
  }
}
