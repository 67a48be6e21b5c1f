import type Database from 'better-sqlite3';
import { asc, eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
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
import { deviceFromRow, directoryFromRows, filterWhere, readBatchOf, type ReadBatch } from '@strongroom/sql-common';
import { deviceDirectories, directoryDevices, revokeAllChallenges } from './schema/devices-albums.js';

const lapsedChallenge = (now: number) =>
  filterWhere(REVOKE_ALL_CHALLENGE_LAPSED, { now }, (f) => revokeAllChallenges[f]);

const buf = (b: Uint8Array): Buffer => Buffer.from(b);

/**
 * The device directory (and so the identity anchor) and revoke-all challenges over SQLite. The
 * compare-and-set of a publication runs in one synchronous transaction.
 */
export class SqliteDeviceStore implements DeviceDirectoryStore, RevokeAllChallengeStore {
  readonly #db: BetterSQLite3Database;

  readonly #findDevice: Database.Statement<[string, string], typeof directoryDevices.$inferSelect>;
  readonly #addedAt: Database.Statement<[string, string], number>;
  /** The write gate's lookup runs on every upload: it shares the turn's read lock (sql-common's batching). */
  readonly #reads: ReadBatch;

  constructor(sqlite: Database.Database) {
    this.#reads = readBatchOf(sqlite);
    this.#findDevice = sqlite.prepare(
      'SELECT account_id AS accountId, device_id AS deviceId, position, ed25519, mldsa65, added_at AS addedAt FROM directory_devices WHERE account_id = ? AND device_id = ?',
    );
    this.#addedAt = sqlite
      .prepare<[string, string], number>(
        'SELECT added_at FROM directory_devices WHERE account_id = ? AND device_id = ?',
      )
      .pluck();
    this.#db = drizzle(sqlite);
  }

  async publishDirectory(d: DirectoryRecord): Promise<PublishOutcome> {
    return this.#db.transaction(
      (tx) => {
        const current = tx.select().from(deviceDirectories).where(eq(deviceDirectories.accountId, d.accountId)).get();
        const outcome = decidePublication(current ?? null, d);
        if (outcome !== 'published') return outcome;
        if (current) {
          tx.delete(directoryDevices).where(eq(directoryDevices.accountId, d.accountId)).run();
          tx.update(deviceDirectories)
            .set({ seq: d.seq, body: buf(d.body), acceptedAt: d.acceptedAt })
            .where(eq(deviceDirectories.accountId, d.accountId))
            .run();
        } else {
          tx.insert(deviceDirectories)
            .values({
              accountId: d.accountId,
              identityKey: buf(d.identityKey),
              seq: d.seq,
              body: buf(d.body),
              acceptedAt: d.acceptedAt,
            })
            .run();
        }
        d.devices.forEach((e, position) => {
          tx.insert(directoryDevices)
            .values({
              accountId: d.accountId,
              deviceId: e.deviceId,
              position,
              ed25519: buf(e.ed25519),
              mldsa65: buf(e.mldsa65),
              addedAt: e.addedAt,
            })
            .run();
        });
        return 'published';
      },
      { behavior: 'immediate' },
    );
  }

  async findDirectory(accountId: string): Promise<DirectoryRecord | null> {
    const r = this.#db.select().from(deviceDirectories).where(eq(deviceDirectories.accountId, accountId)).get();
    if (!r) return null;
    const devices = this.#db
      .select()
      .from(directoryDevices)
      .where(eq(directoryDevices.accountId, accountId))
      .orderBy(asc(directoryDevices.position))
      .all();
    return directoryFromRows(accountId, r, devices);
  }

  async findDevice(accountId: string, deviceId: string): Promise<DeviceEntry | null> {
    const r = this.#findDevice.get(accountId, deviceId);
    return r ? deviceFromRow(r) : null;
  }

  async findDeviceAddedAt(accountId: string, deviceId: string): Promise<number | null> {
    return (await this.#reads.run(() => this.#addedAt.get(accountId, deviceId))) ?? null;
  }

  async findIdentityAnchor(accountId: string): Promise<Uint8Array | null> {
    const r = this.#db
      .select({ k: deviceDirectories.identityKey })
      .from(deviceDirectories)
      .where(eq(deviceDirectories.accountId, accountId))
      .get();
    return r ? new Uint8Array(r.k) : null;
  }

  async insertRevokeAllChallenge(
    c: RevokeAllChallenge,
    now: number,
    admit: (expiries: readonly number[]) => RevokeAllAdmission,
  ): Promise<RevokeAllAdmission> {
    return this.#db.transaction(
      (tx) => {
        tx.delete(revokeAllChallenges).where(lapsedChallenge(now)).run();
        const expiries = tx
          .select({ e: revokeAllChallenges.expiresAt })
          .from(revokeAllChallenges)
          .where(eq(revokeAllChallenges.accountId, c.accountId))
          .all()
          .map((r) => r.e);
        const admission = admit(expiries);
        if (admission.admitted) tx.insert(revokeAllChallenges).values(c).run();
        return admission;
      },
      { behavior: 'immediate' },
    );
  }

  async consumeRevokeAllChallenge(challengeHash: string): Promise<RevokeAllChallenge | null> {
    const r = this.#db
      .delete(revokeAllChallenges)
      .where(eq(revokeAllChallenges.challengeHash, challengeHash))
      .returning()
      .get();
    return r ? { challengeHash: r.challengeHash, accountId: r.accountId, expiresAt: r.expiresAt } : null;
  }
}
