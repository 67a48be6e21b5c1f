import type Database from 'better-sqlite3';
import { asc, gt } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  type AccountRecord,
  type CensusBounds,
  type CensusCounts,
  type DeploymentCensus,
  SESSION_COUNTED,
  UPLOAD_IN_FLIGHT,
} from '@strongroom/core';
import { accountFromRow, filterSql } from '@strongroom/sql-common';
import { accounts } from './schema/index.js';

/** Core's census filters bind the bounds by name. */
const named = (name: string) => `@${name}`;

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
  readonly #counts: Database.Statement<[CensusBounds], CountsRow>;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
    this.#counts = sqlite.prepare(
      `SELECT (SELECT count(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
              (SELECT count(*) FROM sessions WHERE ${filterSql(SESSION_COUNTED, named)}) AS open_sessions,
              (SELECT coalesce(sum(charged), 0) FROM quota_accounts) AS charged,
              (SELECT coalesce(sum(declared_size), 0) FROM upload_sessions WHERE ${filterSql(UPLOAD_IN_FLIGHT, named)}) AS reserved,
              (SELECT count(*) FROM upload_sessions WHERE ${filterSql(UPLOAD_IN_FLIGHT, named)}) AS open_uploads,
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
      now: bounds.now,
      sessionsCreatedAfter: bounds.sessionsCreatedAfter,
      sessionsRefreshedAfter: bounds.sessionsRefreshedAfter,
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
