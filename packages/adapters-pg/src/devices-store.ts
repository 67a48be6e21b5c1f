import { and, asc, eq, sql } from 'drizzle-orm';
import {
  REVOKE_ALL_CHALLENGE_LAPSED,
  type DeviceDirectoryStore,
  type DeviceEntry,
  type DirectoryRecord,
  type PublishOutcome,
  type RevokeAllAdmission,
  type RevokeAllChallenge,
  type RevokeAllChallengeStore,
} from '@strongroom/core';
import { decidePublication } from '@strongroom/core/internal';
import { deviceFromRow, directoryFromRows, filterWhere, loadOf, StatementBatch } from '@strongroom/sql-common';
import type { PgDb } from './db.js';
import { accounts } from './schema/accounts.js';
import { deviceDirectories, directoryDevices, revokeAllChallenges } from './schema/devices-albums.js';

const buf = (b: Uint8Array): Buffer => Buffer.from(b);
/** A (account, device) pair as one map key (an account id is a UUID: the first NUL ends it). */
const deviceKey = (accountId: string, deviceId: string) => `${accountId}\u0000${deviceId}`;

/**
 * The device directory (and so the identity anchor) and revoke-all challenges over PostgreSQL,
 * mirroring SqliteDeviceStore. A publication is a compare-and-set over several rows, so it locks the
 * account row first (FOR NO KEY UPDATE: it does not block the foreign-key checks of session inserts);
 * two first publications racing then see each other instead of both "fixing" an anchor.
 */
export class PgDeviceStore implements DeviceDirectoryStore, RevokeAllChallengeStore {
  /**
   * Every write checks its device (when it was listed): the checks of one turn share one statement.
   * No hold here (unlike the session reads): the write behind each check holds its own batch, and
   * holding the check as well cost one-account uploads about 5 % in a paired run.
   */
  readonly #addedAt: StatementBatch<{ accountId: string; deviceId: string }, number | null>;

  constructor(readonly db: PgDb) {
    const many = db
      .select({
        accountId: directoryDevices.accountId,
        deviceId: directoryDevices.deviceId,
        addedAt: directoryDevices.addedAt,
      })
      .from(directoryDevices)
      .where(
        sql`(${directoryDevices.accountId}, ${directoryDevices.deviceId}) IN
            (SELECT * FROM unnest(${sql.placeholder('accounts')}::text[], ${sql.placeholder('devices')}::text[]))`,
      )
      .prepare('sr_directory_device_added_many');
    this.#addedAt = new StatementBatch(
      async (keys) => {
        // PostgreSQL refuses NUL in text, and one refused parameter would fail the whole batch: such
        // an id names no stored device, so it is answered "none" without asking.
        const asked = keys.filter((k) => !k.deviceId.includes('\u0000') && !k.accountId.includes('\u0000'));
        const rows =
          asked.length === 0
            ? []
            : await many.execute({ accounts: asked.map((k) => k.accountId), devices: asked.map((k) => k.deviceId) });
        const found = new Map(rows.map((r) => [deviceKey(r.accountId, r.deviceId), r.addedAt]));
        return keys.map((k) => found.get(deviceKey(k.accountId, k.deviceId)) ?? null);
      },
      { load: loadOf(db) },
    );
  }

  async publishDirectory(d: DirectoryRecord): Promise<PublishOutcome> {
    return this.db.transaction(async (tx) => {
      await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, d.accountId)).for('no key update');
      const [current] = await tx.select().from(deviceDirectories).where(eq(deviceDirectories.accountId, d.accountId));
      const outcome = decidePublication(current ?? null, d);
      if (outcome !== 'published') return outcome;
      if (current) {
        await tx.delete(directoryDevices).where(eq(directoryDevices.accountId, d.accountId));
        await tx
          .update(deviceDirectories)
          .set({ seq: d.seq, body: buf(d.body), acceptedAt: d.acceptedAt })
          .where(eq(deviceDirectories.accountId, d.accountId));
      } else {
        await tx.insert(deviceDirectories).values({
          accountId: d.accountId,
          identityKey: buf(d.identityKey),
          seq: d.seq,
          body: buf(d.body),
          acceptedAt: d.acceptedAt,
        });
      }
      if (d.devices.length > 0) {
        await tx.insert(directoryDevices).values(
          d.devices.map((e, position) => ({
            accountId: d.accountId,
            deviceId: e.deviceId,
            position,
            ed25519: buf(e.ed25519),
            mldsa65: buf(e.mldsa65),
            addedAt: e.addedAt,
          })),
        );
      }
      return 'published' as const;
    });
  }

  async findDirectory(accountId: string): Promise<DirectoryRecord | null> {
    // One snapshot for the header and its devices, so a publication in between cannot mix them.
    return this.db.transaction(
      async (tx) => {
        const [r] = await tx.select().from(deviceDirectories).where(eq(deviceDirectories.accountId, accountId));
        if (!r) return null;
        const devices = await tx
          .select()
          .from(directoryDevices)
          .where(eq(directoryDevices.accountId, accountId))
          .orderBy(asc(directoryDevices.position));
        return directoryFromRows(accountId, r, devices);
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
  }

  async findDevice(accountId: string, deviceId: string): Promise<DeviceEntry | null> {
    // PostgreSQL refuses NUL in text; such an id names no stored device.
    if (accountId.includes('\u0000') || deviceId.includes('\u0000')) return null;
    const [r] = await this.db
      .select()
      .from(directoryDevices)
      .where(and(eq(directoryDevices.accountId, accountId), eq(directoryDevices.deviceId, deviceId)));
    return r ? deviceFromRow(r) : null;
  }

  async findDeviceAddedAt(accountId: string, deviceId: string): Promise<number | null> {
    return this.#addedAt.run({ accountId, deviceId });
  }

  async findIdentityAnchor(accountId: string): Promise<Uint8Array | null> {
    const [r] = await this.db
      .select({ k: deviceDirectories.identityKey })
      .from(deviceDirectories)
      .where(eq(deviceDirectories.accountId, accountId));
    return r ? new Uint8Array(r.k) : null;
  }

  async insertRevokeAllChallenge(
    c: RevokeAllChallenge,
    now: number,
    admit: (expiries: readonly number[]) => RevokeAllAdmission,
  ): Promise<RevokeAllAdmission> {
    return this.db.transaction(async (tx) => {
      // The account row's lock serialises two requests of one account: each counts what the other wrote.
      await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, c.accountId)).for('update');
      await tx
        .delete(revokeAllChallenges)
        .where(filterWhere(REVOKE_ALL_CHALLENGE_LAPSED, { now }, (f) => revokeAllChallenges[f]));
      const rows = await tx
        .select({ e: revokeAllChallenges.expiresAt })
        .from(revokeAllChallenges)
        .where(eq(revokeAllChallenges.accountId, c.accountId));
      const admission = admit(rows.map((r) => r.e));
      if (admission.admitted) await tx.insert(revokeAllChallenges).values(c);
      return admission;
    });
  }

  async consumeRevokeAllChallenge(challengeHash: string): Promise<RevokeAllChallenge | null> {
    // DELETE ... RETURNING: of two racing consumers, exactly one gets the row.
    const [r] = await this.db
      .delete(revokeAllChallenges)
      .where(eq(revokeAllChallenges.challengeHash, challengeHash))
      .returning();
    return r ? { challengeHash: r.challengeHash, accountId: r.accountId, expiresAt: r.expiresAt } : null;
  }
}
