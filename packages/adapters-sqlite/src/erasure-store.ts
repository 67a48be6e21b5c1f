import type Database from 'better-sqlite3';
import {
  accountState,
  cancelledByErasure,
  decideAssetTransition,
  ok,
  payerIdOf,
  planErasure,
  revokedByErasure,
  type AccountErasureStore,
  type AssetState,
  type ErasureOutcome,
  type QuotaPolicy,
  type Result,
  type UploadState,
} from '@strongroom/core';
import { settledHardSince } from '@strongroom/core/internal';
import { groupCommitOf, OPEN_STATE_SQL, quotaAccountFromRow, type GroupCommit } from '@strongroom/sql-common';
import { eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema/index.js';
import { quotaAccounts } from './schema/index.js';

/**
 * Deleting an account over SQLite: one savepoint of the connection's group commit (acknowledged
 * after its fsync), under the write lock from the first read to the last write. What goes is
 * decided by core (`planErasure`, `cancelledByErasure`, `revokedByErasure`, the asset lifecycle's
 * `erase`); the statements read the account's rows by its indexes and write them by their keys.
 */
export class SqliteAccountErasure implements AccountErasureStore {
  readonly #commits: GroupCommit;
  readonly #q;
  readonly #db: BetterSQLite3Database<typeof schema>;

  constructor(readonly sqlite: Database.Database) {
    this.#commits = groupCommitOf(sqlite);
    this.#db = drizzle(sqlite, { schema });
    const p = (text: string) => sqlite.prepare(text);
    this.#q = {
      account: p('SELECT deleted_at FROM accounts WHERE id = ?'),
      sponsored: p('SELECT account_id FROM sponsored_accounts WHERE sponsor_id = ?'),
      payees: p('SELECT account_id FROM quota_accounts WHERE sponsor_id = ?'),
      clearAccount: p(
        'UPDATE accounts SET address = NULL, address_key = NULL, password_hash = NULL, display_name = NULL, credentials_changed_at = ?, deleted_at = coalesce(deleted_at, ?) WHERE id = ?',
      ),
      closeSessions: p('UPDATE sessions SET closed_at = ? WHERE account_id = ? AND closed_at IS NULL'),
      deletes: [
        'DELETE FROM device_cohorts WHERE user_id = ?',
        'DELETE FROM totp_challenges WHERE account_id = ?',
        'DELETE FROM totp_enrollments WHERE account_id = ?',
        'DELETE FROM totp_throttles WHERE account_id = ?',
        'DELETE FROM identity_links WHERE account_id = ?',
        'DELETE FROM oidc_login_codes WHERE account_id = ?',
        'DELETE FROM oidc_flows WHERE initiator = ?',
        'DELETE FROM directory_devices WHERE account_id = ?',
        'DELETE FROM device_directories WHERE account_id = ?',
        'DELETE FROM revoke_all_challenges WHERE account_id = ?',
        'DELETE FROM federated_refs WHERE receiver = ?',
        'DELETE FROM sync_changes WHERE account_id = ?',
        'DELETE FROM sync_heads WHERE account_id = ?',
        'DELETE FROM sponsored_owners WHERE account_id = ?',
        'DELETE FROM sponsored_owners WHERE owner_id = ?',
        'DELETE FROM sponsored_accounts WHERE account_id = ?',
      ].map(p),
      voidTickets: p('DELETE FROM sign_in_tickets WHERE account_id = ?'),
      retireHandle: p('UPDATE handles SET published = 0, retired_at = ? WHERE account_id = ?'),
      minted: p('SELECT jti, account_id, expires_at, revoked_at FROM minted_capabilities WHERE account_id = ?'),
      revokeMinted: p('UPDATE minted_capabilities SET revoked_at = ? WHERE jti = ?'),
      revokeLinks: p('UPDATE links SET revoked_at = ? WHERE owner_id = ? AND revoked_at IS NULL'),
      // Narrowed to open states by the partial index on payers; core decides each row.
      uploadsPaid: p(
        `SELECT id, uploader_id, payer_id, state, declared_size FROM upload_sessions WHERE payer_id = ? AND state IN ${OPEN_STATE_SQL}`,
      ),
      cancel: p("UPDATE upload_sessions SET state = 'Cancelled' WHERE id = ?"),
      release: p(
        'UPDATE quota_accounts SET reserved = reserved - ?, open_uploads = open_uploads - ? WHERE account_id = ?',
      ),
      setHardSince: p('UPDATE quota_accounts SET hard_since = ? WHERE account_id = ?'),
      unsponsor: p('UPDATE quota_accounts SET sponsor_id = NULL WHERE account_id = ?'),
      assets: p('SELECT id, state, trashed_at, drop_expires_at FROM assets WHERE owner_id = ?'),
      deleteRefs: p('DELETE FROM asset_blobs WHERE asset_id = ?'),
      deleteAsset: p('DELETE FROM assets WHERE id = ?'),
    };
  }

  /**
   * Sign-in tickets end with the account, in the deletion's transaction (the credentials stamp the
   * deletion moves already ends them; their rows go too).
   */
  #voidSignInTickets(accountId: string): void {
    this.#q.voidTickets.run(accountId);
  }

  #ledger(accountId: string) {
    return quotaAccountFromRow(
      accountId,
      this.#db.select().from(quotaAccounts).where(eq(quotaAccounts.accountId, accountId)).get(),
    );
  }

  eraseAccount(
    accountId: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    return this.#commits.run((): Result<ErasureOutcome, 'error.not_found'> => {
      const q = this.#q;
      const row = q.account.get(accountId) as { deleted_at: number | null } | undefined;
      const plan = planErasure({
        accountId,
        account: accountState(row === undefined ? null : { deletedAt: row.deleted_at }),
        sponsoredAccounts: (q.sponsored.all(accountId) as { account_id: string }[]).map((r) => r.account_id),
        ledgerPayees: (q.payees.all(accountId) as { account_id: string }[]).map((r) => r.account_id),
      });
      if (!plan.ok) return plan;
      const erased = new Set(plan.value.accounts);
      const cancelled = new Map<string, { payer: string; size: number }>();
      let purgedAssets = 0;
      for (const id of erased) {
        q.clearAccount.run(now, now, id);
        q.closeSessions.run(now, id);
        for (const d of q.deletes) d.run(id);
        q.retireHandle.run(now, id);
        this.#voidSignInTickets(id);
        for (const t of q.minted.all(id) as {
          jti: string;
          account_id: string;
          expires_at: number;
          revoked_at: number | null;
        }[]) {
          if (
            revokedByErasure({ accountId: t.account_id, expiresAt: t.expires_at, revokedAt: t.revoked_at }, erased, now)
          )
            q.revokeMinted.run(now, t.jti);
        }
        q.revokeLinks.run(now, id);
        type Open = { id: string; uploader_id: string; payer_id: string; state: UploadState; declared_size: number };
        // What the account uploads is paid by it or by its payer (core's payerIdOf): both by the payer index.
        const payer = payerIdOf(this.#ledger(id));
        const candidates = [
          ...(q.uploadsPaid.all(id) as Open[]),
          ...(payer === id ? [] : (q.uploadsPaid.all(payer) as Open[])),
        ];
        for (const u of candidates) {
          if (
            cancelled.has(u.id) ||
            !cancelledByErasure({ state: u.state, uploaderId: u.uploader_id, payerId: u.payer_id }, erased)
          )
            continue;
          q.cancel.run(u.id);
          q.release.run(u.declared_size, 1, u.payer_id);
          cancelled.set(u.id, { payer: u.payer_id, size: u.declared_size });
        }
        for (const a of q.assets.all(id) as {
          id: string;
          state: AssetState;
          trashed_at: number | null;
          drop_expires_at: number | null;
        }[]) {
          const t = decideAssetTransition(
            { state: a.state, trashedAt: a.trashed_at, dropExpiresAt: a.drop_expires_at },
            { kind: 'erase' },
          );
          if (!t.ok || t.write !== 'delete') continue;
          q.deleteRefs.run(a.id);
          q.deleteAsset.run(a.id);
          purgedAssets++;
        }
      }
      for (const id of plan.value.unsponsor) q.unsponsor.run(id);
      for (const payer of new Set([...cancelled.values()].map((c) => c.payer))) {
        const r = this.#ledger(payer);
        const hardSince = settledHardSince(r, policy, now);
        if (hardSince !== r.hardSince) q.setHardSince.run(hardSince, payer);
      }
      return ok({ erased: plan.value.accounts, cancelledUploads: [...cancelled.keys()].sort(), purgedAssets });
    });
  }
}
