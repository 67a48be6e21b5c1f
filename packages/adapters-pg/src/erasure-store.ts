import { eq, sql, type SQL } from 'drizzle-orm';
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
import { OPEN_STATE_SQL, quotaAccountFromRow } from '@strongroom/sql-common';
import { quotaAccounts } from './schema/quota.js';
import { signInTickets } from './schema/sign-in.js';
import { isDeadlock, retrying, rowsOf, type PgDb } from './db.js';
import { createLedgerRows } from './quota-store.js';

/** A deletion PostgreSQL chose to break a deadlock was rolled back whole: it runs again. */
const ERASE_ATTEMPTS = 3;
const OPEN = sql.raw(OPEN_STATE_SQL);

/**
 * Deleting an account over PostgreSQL, in one transaction. The account row is locked first (two
 * deletions of one account serialise; the second finds it deleted), then the ledger rows the
 * deletion moves in key order, as every quota writer takes them, then upload sessions and assets.
 * What goes is decided by core (`planErasure`, `cancelledByErasure`, `revokedByErasure`, the asset
 * lifecycle's `erase`); the statements read the account's rows by their indexes and write them by key.
 */
export class PgAccountErasure implements AccountErasureStore {
  constructor(readonly db: PgDb) {}

  eraseAccount(
    accountId: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    return retrying(ERASE_ATTEMPTS, isDeadlock, () =>
      this.db.transaction((tx) => this.#erase(tx, accountId, policy, now)),
    );
  }

  /**
   * Sign-in tickets end with the account, in the deletion's transaction (the credentials stamp the
   * deletion moves already ends them; their rows go too).
   */
  async #voidSignInTickets(tx: PgDb, accountId: string): Promise<void> {
    await tx.delete(signInTickets).where(eq(signInTickets.accountId, accountId));
  }

  async #erase(
    tx: PgDb,
    accountId: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    const q = <T>(query: SQL) => rowsOf<T>(tx, query);
    const [account] = await q<{ deleted_at: string | null }>(
      sql`SELECT deleted_at FROM accounts WHERE id = ${accountId} FOR UPDATE`,
    );
    const ledger = async (id: string) =>
      quotaAccountFromRow(id, (await tx.select().from(quotaAccounts).where(eq(quotaAccounts.accountId, id)))[0]);
    const facts = async () => ({
      sponsored: (
        await q<{ account_id: string }>(sql`SELECT account_id FROM sponsored_accounts WHERE sponsor_id = ${accountId}`)
      ).map((r) => r.account_id),
      payees: (
        await q<{ account_id: string }>(sql`SELECT account_id FROM quota_accounts WHERE sponsor_id = ${accountId}`)
      ).map((r) => r.account_id),
    });
    const state = accountState(
      account === undefined ? null : { deletedAt: account.deleted_at === null ? null : Number(account.deleted_at) },
    );
    // Refused before anything is locked or made: nothing is written.
    if (state === 'missing') {
      const refused = planErasure({ accountId, account: state, sponsoredAccounts: [], ledgerPayees: [] });
      if (!refused.ok) return refused;
    }
    const seen = await facts();
    const locked = new Set<string>();
    // Each row made to exist first (an empty row is the zero record), as a sponsorship's creation
    // makes and locks its sponsor's: the two then always meet on the same row.
    const lock = async (ids: Iterable<string>) => {
      const fresh = [...new Set(ids)].filter((i) => !locked.has(i)).sort();
      await createLedgerRows(tx, fresh);
      for (const id of fresh) {
        await q(sql`SELECT account_id FROM quota_accounts WHERE account_id = ${id} FOR UPDATE`);
        locked.add(id);
      }
    };
    await lock([accountId, payerIdOf(await ledger(accountId)), ...seen.sponsored, ...seen.payees]);
    // Read again under the locks: a sponsored account created meanwhile (its creation holds the
    // sponsor's ledger row) is seen here.
    const current = await facts();
    const plan = planErasure({
      accountId,
      account: state,
      sponsoredAccounts: current.sponsored,
      ledgerPayees: current.payees,
    });
    if (!plan.ok) return plan;
    await lock([...plan.value.accounts, ...plan.value.unsponsor]);
    const erased = new Set(plan.value.accounts);
    const cancelled = new Map<string, string>();
    let purgedAssets = 0;
    for (const id of plan.value.accounts) {
      await q(
        sql`UPDATE accounts SET address = NULL, address_key = NULL, password_hash = NULL, display_name = NULL, credentials_changed_at = ${now}, deleted_at = coalesce(deleted_at, ${now}) WHERE id = ${id}`,
      );
      await q(sql`UPDATE sessions SET closed_at = ${now} WHERE account_id = ${id} AND closed_at IS NULL`);
      await q(sql`DELETE FROM device_cohorts WHERE user_id = ${id}`);
      await q(sql`DELETE FROM totp_challenges WHERE account_id = ${id}`);
      await q(sql`DELETE FROM totp_enrollments WHERE account_id = ${id}`);
      await q(sql`DELETE FROM totp_throttles WHERE account_id = ${id}`);
      await q(sql`DELETE FROM identity_links WHERE account_id = ${id}`);
      await q(sql`DELETE FROM oidc_login_codes WHERE account_id = ${id}`);
      await q(sql`DELETE FROM oidc_flows WHERE initiator = ${id}`);
      await q(sql`DELETE FROM directory_devices WHERE account_id = ${id}`);
      await q(sql`DELETE FROM device_directories WHERE account_id = ${id}`);
      await q(sql`DELETE FROM revoke_all_challenges WHERE account_id = ${id}`);
      await q(sql`DELETE FROM federated_refs WHERE receiver = ${id}`);
      await q(sql`DELETE FROM sync_changes WHERE account_id = ${id}`);
      await q(sql`DELETE FROM sync_heads WHERE account_id = ${id}`);
      await q(sql`DELETE FROM sponsored_owners WHERE account_id = ${id} OR owner_id = ${id}`);
      await q(sql`DELETE FROM sponsored_accounts WHERE account_id = ${id}`);
      await q(sql`UPDATE handles SET published = false, retired_at = ${now} WHERE account_id = ${id}`);
      for (const t of await q<{ jti: string; account_id: string; expires_at: string; revoked_at: string | null }>(
        sql`SELECT jti, account_id, expires_at, revoked_at FROM minted_capabilities WHERE account_id = ${id}`,
      )) {
        const token = {
          accountId: t.account_id,
          expiresAt: Number(t.expires_at),
          revokedAt: t.revoked_at === null ? null : Number(t.revoked_at),
        };
        if (revokedByErasure(token, erased, now))
          await q(sql`UPDATE minted_capabilities SET revoked_at = ${now} WHERE jti = ${t.jti}`);
      }
      await q(sql`UPDATE links SET revoked_at = ${now} WHERE owner_id = ${id} AND revoked_at IS NULL`);
      await this.#voidSignInTickets(tx, id);
    }
    // Upload sessions next, then assets (the store's lock order). What an account uploads is paid
    // by it or by its payer (core's payerIdOf): both found by the open-sessions payer index.
    const payers = new Set<string>();
    for (const id of plan.value.accounts) payers.add(id).add(payerIdOf(await ledger(id)));
    for (const payer of [...payers].sort()) {
      const open = await q<{
        id: string;
        uploader_id: string;
        payer_id: string;
        state: UploadState;
        declared_size: string;
      }>(
        sql`SELECT id, uploader_id, payer_id, state, declared_size FROM upload_sessions WHERE payer_id = ${payer} AND state IN ${OPEN} ORDER BY id FOR UPDATE`,
      );
      for (const u of open) {
        if (
          cancelled.has(u.id) ||
          !cancelledByErasure({ state: u.state, uploaderId: u.uploader_id, payerId: u.payer_id }, erased)
        )
          continue;
        await q(sql`UPDATE upload_sessions SET state = 'Cancelled' WHERE id = ${u.id}`);
        await q(
          sql`UPDATE quota_accounts SET reserved = reserved - ${Number(u.declared_size)}, open_uploads = open_uploads - 1 WHERE account_id = ${u.payer_id}`,
        );
        cancelled.set(u.id, u.payer_id);
      }
    }
    for (const id of plan.value.accounts) {
      for (const a of await q<{
        id: string;
        state: AssetState;
        trashed_at: string | null;
        drop_expires_at: string | null;
      }>(
        sql`SELECT id, state, trashed_at, drop_expires_at FROM assets WHERE owner_id = ${id} ORDER BY id FOR UPDATE`,
      )) {
        const t = decideAssetTransition(
          {
            state: a.state,
            trashedAt: a.trashed_at === null ? null : Number(a.trashed_at),
            dropExpiresAt: a.drop_expires_at === null ? null : Number(a.drop_expires_at),
          },
          { kind: 'erase' },
        );
        if (!t.ok || t.write !== 'delete') continue;
        await q(sql`DELETE FROM asset_blobs WHERE asset_id = ${a.id}`);
        await q(sql`DELETE FROM assets WHERE id = ${a.id}`);
        purgedAssets++;
      }
    }
    for (const id of plan.value.unsponsor)
      await q(sql`UPDATE quota_accounts SET sponsor_id = NULL WHERE account_id = ${id}`);
    for (const payer of [...new Set(cancelled.values())].sort()) {
      const r = await ledger(payer);
      const hardSince = settledHardSince(r, policy, now);
      if (hardSince !== r.hardSince)
        await q(sql`UPDATE quota_accounts SET hard_since = ${hardSince} WHERE account_id = ${payer}`);
    }
    return ok({ erased: plan.value.accounts, cancelledUploads: [...cancelled.keys()].sort(), purgedAssets });
  }
}
