import type Database from 'better-sqlite3';
import { and, asc, desc, eq, inArray, isNull } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  decideAnnouncement,
  type AttestationHistoryEntry,
  type AttestationKeyRecord,
  type AttestationKeyStore,
  type AllowlistEntry,
  type DeprecationStore,
  type RegistrationAllowlist,
} from '@strongroom/core';
import { acceptsHistoryEntry } from '@strongroom/core/internal';
import { attestationHistory, attestationKeys, deprecations, registrationAllowlist } from './schema/records.js';

/**
 * Deprecation announcements over SQLite. The announcement is read, judged by core's
 * `decideAnnouncement` and inserted in one IMMEDIATE transaction (the write lock is taken first),
 * so announcements from two processes are judged one after the other.
 */
export class SqliteDeprecationStore implements DeprecationStore {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async listDeprecations() {
    return this.#db.select().from(deprecations).all();
  }

  async announceDeprecation(
    ...[candidate, policy]: Parameters<DeprecationStore['announceDeprecation']>
  ): ReturnType<DeprecationStore['announceDeprecation']> {
    return this.#db.transaction(
      (tx) => {
        const decided = decideAnnouncement(tx.select().from(deprecations).all(), candidate, policy);
        if (decided.ok) tx.insert(deprecations).values(decided.value).run();
        return decided;
      },
      { behavior: 'immediate' },
    );
  }
}

/**
 * Attestation keys and their history over SQLite. The history table is only ever inserted into,
 * and only with an entry core's `acceptsHistoryEntry` finds extends the stored chain, inside the
 * same IMMEDIATE transaction that retires the previous key.
 */
export class SqliteAttestationStore implements AttestationKeyStore {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async listAttestationKeys(): Promise<AttestationKeyRecord[]> {
    return this.#db
      .select()
      .from(attestationKeys)
      .orderBy(asc(attestationKeys.createdAt), asc(attestationKeys.kid))
      .all();
  }

  async listAttestationHistory(): Promise<AttestationHistoryEntry[]> {
    return this.#db.select().from(attestationHistory).orderBy(asc(attestationHistory.seq)).all();
  }

  async appendAttestationKey(
    key: AttestationKeyRecord,
    entry: AttestationHistoryEntry,
    at: number,
  ): Promise<'appended' | 'stale'> {
    if (entry.kid !== key.kid || entry.publicKey !== key.publicKey) return 'stale';
    return this.#db.transaction(
      (tx) => {
        const last = tx.select().from(attestationHistory).orderBy(desc(attestationHistory.seq)).limit(1).get() ?? null;
        if (!acceptsHistoryEntry(last, entry)) return 'stale' as const;
        tx.update(attestationKeys).set({ retiredAt: at }).where(isNull(attestationKeys.retiredAt)).run();
        tx.insert(attestationKeys)
          .values({ ...key, retiredAt: null })
          .run();
        tx.insert(attestationHistory).values(entry).run();
        return 'appended' as const;
      },
      { behavior: 'immediate' },
    );
  }

  async resealAttestationKey(kid: string, from: string, to: string): Promise<boolean> {
    const r = this.#db
      .update(attestationKeys)
      .set({ privateKey: to })
      .where(and(eq(attestationKeys.kid, kid), eq(attestationKeys.privateKey, from)))
      .run();
    return r.changes === 1;
  }
}

/** The registration allowlist over SQLite: one row per entry, matched exactly. */
export class SqliteRegistrationAllowlist implements RegistrationAllowlist {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async allowRegistration(entry: string, at: number): Promise<boolean> {
    return (
      this.#db.insert(registrationAllowlist).values({ entry, addedAt: at }).onConflictDoNothing().run().changes === 1
    );
  }

  async disallowRegistration(entry: string): Promise<boolean> {
    return this.#db.delete(registrationAllowlist).where(eq(registrationAllowlist.entry, entry)).run().changes === 1;
  }

  async listAllowedRegistrations(): Promise<AllowlistEntry[]> {
    return this.#db.select().from(registrationAllowlist).orderBy(asc(registrationAllowlist.entry)).all();
  }

  async findAllowedRegistrations(entries: readonly string[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const rows = this.#db
      .select({ entry: registrationAllowlist.entry })
      .from(registrationAllowlist)
      .where(inArray(registrationAllowlist.entry, [...entries]))
      .all();
    return rows.map((r) => r.entry);
  }
}
