import { asc, gt, sql } from 'drizzle-orm';
import {
  type AccountRecord,
  type CensusBounds,
  type CensusCounts,
  type DeploymentCensus,
  SESSION_COUNTED,
  UPLOAD_IN_FLIGHT,
} from '@strongroom/core';
import { accountFromRow, filterWhere } from '@strongroom/sql-common';
import { rowsOf, type PgDb } from './db.js';
import { accounts } from './schema/index.js';

type Big = string | number;
type CountsRow = {
  accounts: Big;
  open_sessions: Big;
  charged: Big;
  reserved: Big;
  open_uploads: Big;
  blobs: Big;
  blob_bytes: Big;
};

/**
 * Every account and the deployment's totals over PostgreSQL, mirroring SqliteDeploymentCensus:
 * the counts are one statement (one snapshot) over core's bounds.
 */
export class PgDeploymentCensus implements DeploymentCensus {
  constructor(readonly db: PgDb) {}

  async listAccounts(after: string | null, limit: number): Promise<AccountRecord[]> {
    const q = this.db.select().from(accounts);
    return (await (after === null ? q : q.where(gt(accounts.id, after))).orderBy(asc(accounts.id)).limit(limit)).map(
      accountFromRow,
    );
  }

  async countDeployment(bounds: CensusBounds): Promise<CensusCounts> {
    const [r] = await rowsOf<CountsRow>(
      this.db,
      sql`SELECT (SELECT count(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
                 (SELECT count(*) FROM sessions WHERE ${filterWhere(SESSION_COUNTED, { ...bounds })}) AS open_sessions,
                 (SELECT coalesce(sum(charged), 0) FROM quota_accounts) AS charged,
                 (SELECT coalesce(sum(declared_size), 0) FROM upload_sessions WHERE ${filterWhere(UPLOAD_IN_FLIGHT, { ...bounds })}) AS reserved,
                 (SELECT count(*) FROM upload_sessions WHERE ${filterWhere(UPLOAD_IN_FLIGHT, { ...bounds })}) AS open_uploads,
                 (SELECT count(*) FROM blobs) AS blobs,
                 (SELECT coalesce(sum(size), 0) FROM blobs) AS blob_bytes`,
    );
    // count and sum come back as bigint and numeric: text in node-postgres, exact below 2^53.
    return {
      accounts: Number(r!.accounts),
      openSessions: Number(r!.open_sessions),
      charged: Number(r!.charged),
      reserved: Number(r!.reserved),
      openUploads: Number(r!.open_uploads),
      blobs: Number(r!.blobs),
      blobBytes: Number(r!.blob_bytes),
    };
  }
}
