import { and, asc, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
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
import type { PgDb } from './db.js';
import { attestationHistory, attestationKeys, deprecations, registrationAllowlist } from './schema/records.js';

/** Serialise announcements, and attestation appends, across every process on the database. */
const DEPRECATION_LOCK = 0x64657072; // 'depr'
const ATTESTATION_LOCK = 0x61747374; // 'atst'

/**
 * Deprecation announcements over PostgreSQL. Under an advisory transaction lock, the stored
 * announcements are read, core's `decideAnnouncement` judges the candidate, and it is inserted.
 */
export class PgDeprecationStore implements DeprecationStore {
  constructor(readonly db: PgDb) {}

  async listDeprecations() {
    return this.db.select().from(deprecations);
  }

  async announceDeprecation(
    ...[candidate, policy]: Parameters<DeprecationStore['announceDeprecation']>
  ): ReturnType<DeprecationStore['announceDeprecation']> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${DEPRECATION_LOCK})`);
      const decided = decideAnnouncement(await tx.select().from(deprecations), candidate, policy);
      if (decided.ok) await tx.insert(deprecations).values(decided.value);
      return decided;
    });
  }
}

/**
 * Attestation keys and their history over PostgreSQL, mirroring SqliteAttestationStore: the
 * history is only inserted into, with an entry core finds extends the chain, under a lock.
 */
export class PgAttestationStore implements AttestationKeyStore {
  constructor(readonly db: PgDb) {}

  async listAttestationKeys(): Promise<AttestationKeyRecord[]> {
    return this.db.select().from(attestationKeys).orderBy(asc(attestationKeys.createdAt), asc(attestationKeys.kid));
  }

  async listAttestationHistory(): Promise<AttestationHistoryEntry[]> {
    return this.db.select().from(attestationHistory).orderBy(asc(attestationHistory.seq));
  }

  async appendAttestationKey(
    key: AttestationKeyRecord,
    entry: AttestationHistoryEntry,
    at: number,
  ): Promise<'appended' | 'stale'> {
    if (entry.kid !== key.kid || entry.publicKey !== key.publicKey) return 'stale';
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${ATTESTATION_LOCK})`);
      const [last] = await tx.select().from(attestationHistory).orderBy(desc(attestationHistory.seq)).limit(1);
      if (!acceptsHistoryEntry(last ?? null, entry)) return 'stale' as const;
      await tx.update(attestationKeys).set({ retiredAt: at }).where(isNull(attestationKeys.retiredAt));
      await tx.insert(attestationKeys).values({ ...key, retiredAt: null });
      await tx.insert(attestationHistory).values(entry);
      return 'appended' as const;
    });
  }

  async resealAttestationKey(kid: string, from: string, to: string): Promise<boolean> {
    const changed = await this.db
      .update(attestationKeys)
      .set({ privateKey: to })
      .where(and(eq(attestationKeys.kid, kid), eq(attestationKeys.privateKey, from)))
      .returning({ kid: attestationKeys.kid });
    return changed.length === 1;
  }
}

/** The registration allowlist over PostgreSQL: one row per entry, matched exactly. */
export class PgRegistrationAllowlist implements RegistrationAllowlist {
  constructor(readonly db: PgDb) {}

  async allowRegistration(entry: string, at: number): Promise<boolean> {
    const rows = await this.db
      .insert(registrationAllowlist)
      .values({ entry, addedAt: at })
      .onConflictDoNothing()
      .returning({ entry: registrationAllowlist.entry });
    return rows.length === 1;
  }

  async disallowRegistration(entry: string): Promise<boolean> {
    const rows = await this.db
      .delete(registrationAllowlist)
      .where(eq(registrationAllowlist.entry, entry))
      .returning({ entry: registrationAllowlist.entry });
    return rows.length === 1;
  }

  async listAllowedRegistrations(): Promise<AllowlistEntry[]> {
    return this.db.select().from(registrationAllowlist).orderBy(asc(registrationAllowlist.entry));
  }

  async findAllowedRegistrations(entries: readonly string[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const rows = await this.db
      .select({ entry: registrationAllowlist.entry })
      .from(registrationAllowlist)
      .where(inArray(registrationAllowlist.entry, [...entries]));
    return rows.map((r) => r.entry);
  }
}
