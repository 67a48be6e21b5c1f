import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SigningKeyRecord } from '@strongroom/core';
import { PgStore } from './store.js';
import { PgTotpStore } from './totp-store.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

/**
 * Races the contract suite does not stage: writers that must serialise across processes, each
 * call on its own pooled connection. On PG_URL these are real concurrent transactions under READ
 * COMMITTED; PGlite has one connection and runs them one after another, so there they only check
 * the sequential outcome.
 */
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.reset();
});

const key = (kid: string, at: number): SigningKeyRecord => ({
  kid,
  privateKey: `p${kid}`,
  publicKey: `x${kid}`,
  createdAt: at,
  retiredAt: null,
});

describe('PostgreSQL: cross-connection races', () => {
  it('servers starting together on an empty key table agree on one first key', async () => {
    const store = new PgStore(t.db);
    const seen = await Promise.all(Array.from({ length: 8 }, (_, i) => store.ensureSigningKey(key(`k${i}`, 1))));
    const all = await store.listSigningKeys();
    expect(all).toHaveLength(1);
    for (const ring of seen) expect(ring).toEqual(all);
  });

  it('concurrent rotations leave exactly one active key', async () => {
    const store = new PgStore(t.db);
    await store.ensureSigningKey(key('first', 1));
    await Promise.all(Array.from({ length: 6 }, (_, i) => store.rotateSigningKey(key(`r${i}`, 10 + i), 10 + i)));
    const all = await store.listSigningKeys();
    expect(all).toHaveLength(7);
    expect(all.filter((k) => k.retiredAt === null)).toHaveLength(1);
  });

  it('one TOTP step is accepted once however many requests race for it', async () => {
    const store = new PgStore(t.db);
    const totp = new PgTotpStore(t.db);
    const accountId = '0190a000-0000-7000-8000-00000000c0de';
    await store.createAccount({
      id: accountId,
      address: 'race@example.org',
      addressKey: 'race@example.org',
      passwordHash: 'h',
      displayName: null,
      createdAt: 1,
      lockedAt: null,
      credentialsChangedAt: null,
    });
    await totp.savePendingTotp({ accountId, sealedSecret: 'sealed', at: 1 });
    expect(await totp.confirmTotp({ accountId, sealedSecret: 'sealed', step: 100, at: 2 })).toBe(true);
    const wins = await Promise.all(
      Array.from({ length: 10 }, () => totp.advanceTotpStep(accountId, 101, 101 * 30_000)),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    // A lower step after a higher one is a replay too.
    const mixed = await Promise.all([
      totp.advanceTotpStep(accountId, 103, 102 * 30_000),
      totp.advanceTotpStep(accountId, 102, 102 * 30_000),
    ]);
    expect(mixed[0]).toBe(true);
    expect((await totp.findTotpEnrollment(accountId))?.highestUsedStep).toBe(103);
  });

  it("a sign-in's session and a credential change committing meanwhile: the session is not opened (it waits for the change, then sees it)", async () => {
    if (t.kind !== 'postgres') return; // one connection: nothing runs meanwhile
    const store = new PgStore(t.db);
    const accountId = '0190a000-0000-7000-8000-00000000c1a0';
    await store.createAccount({
      id: accountId,
      address: 'cred@example.org',
      addressKey: 'cred@example.org',
      passwordHash: 'h',
      displayName: null,
      createdAt: 1,
      lockedAt: null,
      credentialsChangedAt: null,
    });
    const session = {
      id: '0190a000-0000-7000-8000-00000000c1a1',
      accountId,
      tokenHash: 'c'.repeat(64),
      cohortHash: null,
      createdAt: 10,
      refreshedAt: 10,
      lastUsedAt: 10,
      accessFloor: 10,
      closedAt: null,
      method: 'password' as const,
      authenticatedAt: 10,
    };
    let opening: Promise<boolean> | null = null;
    let settled = false;
    // A revoke-all as the stores run it: the account's stamp, then every open session closed; the
    // sign-in (which judged its password against the old stamp) arrives between those and the commit.
    await t.db.transaction(async (tx) => {
      await tx.execute(sql`UPDATE accounts SET credentials_changed_at = 20 WHERE id = ${accountId}`);
      await tx.execute(sql`UPDATE sessions SET closed_at = 20 WHERE account_id = ${accountId} AND closed_at IS NULL`);
      opening = store.openSession(session, null);
      void opening.then(() => (settled = true));
      // Until the sign-in's connection waits on this transaction's lock (or, wrongly, settles first).
      const waiting = async () => {
        const r = (await t.db.execute(
          sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )) as unknown as { rows: { n: number }[] };
        return r.rows[0]!.n >= 1;
      };
      for (let i = 0; i < 1_500 && !settled && !(await waiting()); i++) await new Promise((r) => setTimeout(r, 10));
      expect(settled).toBe(false);
    });
    expect(await opening!).toBe(false);
    expect(await store.findSessionById(session.id)).toBeNull();
  });
});
