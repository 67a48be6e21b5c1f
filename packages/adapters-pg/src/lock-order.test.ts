import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountRecord, LinkRecord, NewUpload, QuotaPolicy } from '@strongroom/core';
import { OPEN_STATE_SQL } from '@strongroom/sql-common';
import pg from 'pg';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { PgQuotaStore } from './quota-store.js';
import { PgStore } from './store.js';
import { PgLinkStore, PgSponsorshipStore } from './sharing-store.js';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from './testing.js';

/**
 * The store's lock order (quota rows in key order, then upload sessions, then assets and blobs)
 * under real concurrency: several pools stand in for several server processes on one database.
 * Only meaningful with many connections: PG_URL.
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'lock-order.test.ts: SKIPPED: PG_URL is not set; PGlite has a single connection, so nothing can deadlock.',
  );

const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 100_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};
const hash = (i: number): string => i.toString(16).padStart(64, '0');
let seq = 0;
const uid = (prefix: string): string => `${prefix}-0000-7000-8000-${String(++seq).padStart(12, '0')}`;

function upload(uploaderId: string, over: Partial<NewUpload> = {}): NewUpload {
  return {
    id: uid('0190d000'),
    uploaderId,
    kind: 'original',
    declaredSize: 10,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: 1_000,
    expiresAt: 10_000_000,
    ...over,
  };
}
function uploadLink(ownerId: string): LinkRecord {
  return {
    idHash: uid('0190e000'),
    sealedId: 'v1.sealed.id',
    ownerId,
    kind: 'upload',
    albumId: 'album',
    assetIds: [],
    wrappedKey: null,
    sealKey: 'c2VhbA',
    maxBytes: null,
    acceptedBytes: 0,
    createdAt: 1_000,
    expiresAt: null,
    revokedAt: null,
  };
}
const sponsoredAccount = (id: string): AccountRecord => ({
  id,
  address: null,
  addressKey: null,
  passwordHash: null,
  displayName: null,
  createdAt: 1_000,
  lockedAt: null,
  credentialsChangedAt: null,
});

/** The sqlstate of an error or, through drizzle, of its cause. */
function sqlState(error: unknown): string {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string') return e.code;
  }
  return error instanceof Error ? error.message : String(error);
}

/** A transaction's outcome as a value: what it answered, or the sqlstate it failed with. */
const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (e: unknown) => ({ ok: false as const, error: sqlState(e) }),
  );

/** Waits until `n` backends of this database wait on a lock (a heavyweight lock: row, transaction or advisory). */
async function waiters(admin: pg.Client, n: number, orElse: () => boolean = () => false): Promise<void> {
  // Up to 15 s: on a loaded two-core machine a transaction may take seconds to reach its lock.
  for (let i = 0; i < 1_500; i++) {
    if (orElse()) return;
    const r = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (r.rows[0]!.n >= n) return;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error(`never saw ${n} waiters`);
}

describe.skipIf(!PG_URL)('PostgreSQL lock order under real concurrency (PG_URL)', () => {
  let scratch: ScratchDatabase;
  const pools: OpenPgDatabase[] = [];
  let admin: pg.Client;
  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'lockorder');
    for (let i = 0; i < 4; i++)
      pools.push(await openPgDatabase(scratch.url, { maxConnections: 4, connectTimeoutMs: 60_000 }));
    admin = new pg.Client({ connectionString: scratch.url });
    await admin.connect();
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    for (const p of pools) await p.close();
    await scratch?.drop();
  });

  /** An upload link of `owner`'s and one drop opened through it at t = 1,000, as a guest opens it. */
  async function linkWithDrop(q: PgQuotaStore, owner: string) {
    const link = uploadLink(owner);
    await new PgLinkStore(pools[0]!.db).createLink(link);
    const drop = upload(owner, { dropLinkIdHash: link.idHash });
    const opened = await q.openDrop({ ...drop, dropLinkIdHash: link.idHash }, 'ab'.repeat(32), POLICY, 1_000);
    return { link, drop, opened };
  }

  it("a purge of an expired drop and the sweep collecting it lock the owner's quota row and the asset row in one order", async () => {
    const [q1, q2] = [new PgQuotaStore(pools[0]!.db), new PgQuotaStore(pools[1]!.db)];
    const owner = uid('0190a000');
    const { drop: d, opened: dropped } = await linkWithDrop(q1, owner);
    expect(dropped.ok).toBe(true);
    const h = hash(0xd70b);
    const done = await q1.completeUpload(
      {
        uploadId: d.id,
        contentHash: h,
        size: 10,
        asset: { create: { id: d.id, ownerId: owner, dropExpiresAt: 5_000 } },
      },
      POLICY,
      1_001,
    );
    expect(typeof done === 'string' ? done : done.outcome).toBe('completed');

    // A third connection holds the blob's row, so the sweep stops between the asset it deletes and
    // the owner's row it credits; the purge then takes the owner's row and waits for the asset.
    const holder = new pg.Client({ connectionString: scratch.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM blobs WHERE content_hash = $1 FOR UPDATE', [h]);
      const sweep = q2.sweep(POLICY, 10_000).then(
        (r) => ({ ok: true as const, swept: r.swept.map((b) => b.contentHash) }),
        (e: unknown) => ({ ok: false as const, error: sqlState(e) }),
      );
      await waiters(admin, 1);
      const purge = q1.purgeAsset(d.id, 10_000).then(
        (r) => ({ ok: true as const, purged: r }),
        (e: unknown) => ({ ok: false as const, error: sqlState(e) }),
      );
      await waiters(admin, 2);
      await holder.query('COMMIT');
      const [swept, purged] = await Promise.all([sweep, purge]);
      // Neither is chosen to break a deadlock: the sweep collects the drop and its bytes, and the
      // purge finds the asset gone.
      expect({ swept, purged }).toEqual({ swept: { ok: true, swept: [h] }, purged: { ok: true, purged: false } });
    } finally {
      await holder.end();
    }
    const [row] = (
      await admin.query<{ charged: string }>('SELECT charged FROM quota_accounts WHERE account_id = $1', [owner])
    ).rows;
    expect(Number(row!.charged)).toBe(0);
  }, 30_000);

  it('a metadata edit whose payer changes under its lock does not take the new payer out of key order', async () => {
    const [q1, q2] = [new PgQuotaStore(pools[0]!.db), new PgQuotaStore(pools[1]!.db)];
    const sp1 = new PgSponsorshipStore(pools[2]!.db);
    // The sponsor's key sorts before the payee's.
    const sponsor = uid('0190c100');
    const payee = uid('0190d100');
    await q1.setLimits(sponsor, null);
    const u = upload(payee);
    expect((await q1.openUpload(u, POLICY, 1_000)).ok).toBe(true);
    const done = await q1.completeUpload(
      {
        uploadId: u.id,
        contentHash: hash(0x3e7a),
        size: 10,
        asset: { create: { id: u.id, ownerId: payee, dropExpiresAt: null } },
      },
      POLICY,
      1_001,
    );
    expect(typeof done === 'string' ? done : done.outcome).toBe('completed');

    // A third connection holds the payee's row. Queued behind it: a sponsor change (holding the
    // sponsor's row) and the edit (which read the payee as its own payer); a fourth connection
    // then waits for the sponsor's row. When the change commits, the fourth connection has the
    // sponsor's row and the edit the payee's, and finds the sponsor its payer. The fourth then
    // takes the payee's row, as an opening for the payee takes both, in key order.
    const [holder, other] = [
      new pg.Client({ connectionString: scratch.url }),
      new pg.Client({ connectionString: scratch.url }),
    ];
    await holder.connect();
    await other.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [payee]);
      const change = settled(sp1.setSponsor(payee, sponsor));
      await waiters(admin, 1);
      const edit = settled(
        q2.replaceMetadata({ assetId: u.id, accountId: payee, contentHash: hash(0x3e7b), size: 5 }, POLICY, 2_000),
      );
      await waiters(admin, 2);
      await other.query('BEGIN');
      const sponsorRow = other.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [sponsor]);
      await waiters(admin, 3);
      await holder.query('COMMIT');
      expect(await change).toEqual({ ok: true, value: { ok: true, value: undefined } });
      await sponsorRow;
      // The edit now waits for the sponsor's row (holding the payee's, before the fix), unless on a
      // busy machine it reached the sponsor's row before the fourth connection and is done: either
      // way what is checked below is that both finish, each with its rows in key order.
      let editDone = false;
      void edit.then(() => (editDone = true));
      await waiters(admin, 1, () => editDone);
      const payeeRow = settled(
        other
          .query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [payee])
          .then((r) => r.rows.length),
      );
      const taken = await payeeRow;
      await other.query(taken.ok ? 'COMMIT' : 'ROLLBACK');
      expect({ taken, edited: await edit }).toEqual({
        taken: { ok: true, value: 1 },
        edited: { ok: true, value: { ok: true, value: undefined } },
      });
    } finally {
      await holder.end();
      await other.end();
    }
    // The edit's new blob is the sponsor's to pay for.
    const [row] = (
      await admin.query<{ charged_to: string }>('SELECT charged_to FROM blobs WHERE content_hash = $1', [hash(0x3e7b)])
    ).rows;
    expect(row?.charged_to).toBe(sponsor);
  }, 30_000);

  it('an opening whose uploader gains a sponsor under its lock does not take the sponsor out of key order', async () => {
    const q = new PgQuotaStore(pools[1]!.db);
    const sp = new PgSponsorshipStore(pools[2]!.db);
    // The sponsor's key sorts before the payee's.
    const sponsor = uid('0190c400');
    const payee = uid('0190d400');
    await q.setLimits(sponsor, null);
    await q.setLimits(payee, null);

    // As for the metadata edit above: the opening read the payee as its own payer and waits for
    // its row behind a sponsor change; a fourth connection gets the sponsor's row when the change
    // commits and then takes the payee's. It checks for deadlocks first (a short deadlock_timeout),
    // so a cycle surfaces on it rather than as a silent retry of the opening.
    const [holder, other] = [
      new pg.Client({ connectionString: scratch.url }),
      new pg.Client({ connectionString: scratch.url }),
    ];
    await holder.connect();
    await other.connect();
    try {
      await other.query(`SET deadlock_timeout = '20ms'`);
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [payee]);
      const change = settled(sp.setSponsor(payee, sponsor));
      await waiters(admin, 1);
      const u = upload(payee, { declaredSize: 7 });
      const opening = settled(q.openUpload(u, POLICY, 2_000));
      await waiters(admin, 2);
      await other.query('BEGIN');
      const sponsorRow = other.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [sponsor]);
      await waiters(admin, 3);
      await holder.query('COMMIT');
      expect(await change).toEqual({ ok: true, value: { ok: true, value: undefined } });
      await sponsorRow;
      await waiters(admin, 1);
      const taken = await settled(
        other
          .query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [payee])
          .then((r) => r.rows.length),
      );
      await other.query(taken.ok ? 'COMMIT' : 'ROLLBACK');
      const opened = await opening;
      expect({ taken, payer: opened.ok && opened.value.ok ? opened.value.value.payerId : opened }).toEqual({
        taken: { ok: true, value: 1 },
        payer: sponsor,
      });
    } finally {
      await holder.end();
      await other.end();
    }
  }, 30_000);

  it("a link revocation cancelling a drop its owner's former sponsor pays for, beside the drop's finalize", async () => {
    const [q1, q2] = [new PgQuotaStore(pools[0]!.db), new PgQuotaStore(pools[1]!.db)];
    const sp = new PgSponsorshipStore(pools[2]!.db);
    // The owner's key sorts before its sponsor's.
    const owner = uid('0190a200');
    const sponsor = uid('0190b200');
    await q1.setLimits(sponsor, null);
    expect(await sp.setSponsor(owner, sponsor)).toEqual({ ok: true, value: undefined });
    const { link, drop: d, opened } = await linkWithDrop(q1, owner);
    expect(opened.ok && opened.value.payerId).toBe(sponsor);
    // The operator ends the sponsorship: the owner pays for itself from now on, the drop's
    // reservation stays the sponsor's.
    expect(await sp.setSponsor(owner, null)).toEqual({ ok: true, value: undefined });

    // A third connection holds the sponsor's row: the finalize waits for it (before the session
    // row), the revocation cancels the session and then waits for it to release the reservation.
    const holder = new pg.Client({ connectionString: scratch.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [sponsor]);
      const finalize = settled(
        q1.completeUpload(
          {
            uploadId: d.id,
            contentHash: hash(0x1ec0),
            size: 10,
            asset: { create: { id: d.id, ownerId: owner, dropExpiresAt: 90_000 } },
          },
          POLICY,
          2_000,
        ),
      );
      await waiters(admin, 1);
      const revoke = settled(q2.revokeLink(owner, link.idHash, POLICY, 2_000));
      await waiters(admin, 2);
      await holder.query('COMMIT');
      const [f, r] = await Promise.all([finalize, revoke]);
      // The finalize went first (it queued first): the revocation finds nothing left to cancel.
      expect({ f: f.ok ? (typeof f.value === 'string' ? f.value : f.value.outcome) : f.error, r }).toEqual({
        f: 'completed',
        r: { ok: true, value: { revoked: true, cancelled: [] } },
      });
    } finally {
      await holder.end();
    }
    const rows = (
      await admin.query<{ account_id: string; reserved: string; charged: string }>(
        'SELECT account_id, reserved, charged FROM quota_accounts WHERE account_id IN ($1, $2) ORDER BY account_id',
        [owner, sponsor],
      )
    ).rows;
    expect(rows.map((x) => [x.account_id, Number(x.reserved), Number(x.charged)])).toEqual([
      [owner, 0, 0],
      [sponsor, 0, 10],
    ]);
  }, 30_000);

  it('a sponsor change PostgreSQL chooses to break a deadlock runs again', async () => {
    const q = new PgQuotaStore(pools[0]!.db);
    const sp = new PgSponsorshipStore(pools[2]!.db);
    const payee = uid('0190a500');
    const sponsor = uid('0190b500');
    await q.setLimits(payee, null);
    await q.setLimits(sponsor, null);

    // A second connection holds the sponsor's row; the change takes the payee's and waits for it;
    // the connection then wants the payee's row: a cycle. It checks for deadlocks late (a long
    // deadlock_timeout), so PostgreSQL breaks the cycle by rolling the sponsor change back.
    const other = new pg.Client({ connectionString: scratch.url });
    await other.connect();
    try {
      await other.query(`SET deadlock_timeout = '10s'`);
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [sponsor]);
      const change = settled(sp.setSponsor(payee, sponsor));
      await waiters(admin, 1);
      const taken = await settled(
        other
          .query('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [payee])
          .then((r) => r.rows.length),
      );
      await other.query(taken.ok ? 'COMMIT' : 'ROLLBACK');
      expect({ taken, changed: await change }).toEqual({
        taken: { ok: true, value: 1 },
        changed: { ok: true, value: { ok: true, value: undefined } },
      });
    } finally {
      await other.end();
    }
    const [row] = (
      await admin.query<{ sponsor_id: string | null }>('SELECT sponsor_id FROM quota_accounts WHERE account_id = $1', [
        payee,
      ])
    ).rows;
    expect(row?.sponsor_id).toBe(sponsor);
  }, 30_000);

  it("a drop opening through the link's owner while the link is revoked, its owner's sponsor ended meanwhile, is refused or cancelled", async () => {
    const [q1, q2] = [new PgQuotaStore(pools[0]!.db), new PgQuotaStore(pools[1]!.db)];
    const sp = new PgSponsorshipStore(pools[2]!.db);
    const owner = uid('0190a600');
    const sponsor = uid('0190b600');
    await q1.setLimits(sponsor, null);
    expect(await sp.setSponsor(owner, sponsor)).toEqual({ ok: true, value: undefined });
    const { link, drop: d0, opened: first } = await linkWithDrop(q1, owner);
    expect(first.ok && first.value.payerId).toBe(sponsor);

    /** Waits until `p` has settled or `n` backends wait on a lock, whichever comes first; answers whether `p` settled. */
    const settledOrWaiting = async (p: Promise<unknown>, n: number): Promise<boolean> => {
      let done = false;
      void p.then(() => (done = true));
      for (let i = 0; i < 500; i++) {
        if (done) return true;
        const r = await admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        if (r.rows[0]!.n >= n) return done;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error(`neither settled nor saw ${n} waiters`);
    };
    // A third connection holds the first drop's session row, so the revocation stops after marking
    // the link revoked (uncommitted) and before cancelling the link's drops. Meanwhile the operator
    // ends the sponsorship and a guest opens a second drop through the link.
    const holder = new pg.Client({ connectionString: scratch.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM upload_sessions WHERE id = $1 FOR UPDATE', [d0.id]);
      const revoke = settled(q2.revokeLink(owner, link.idHash, POLICY, 2_000));
      await waiters(admin, 1);
      const change = settled(sp.setSponsor(owner, null));
      const changed = await settledOrWaiting(change, 2);
      const d1 = upload(owner, { dropLinkIdHash: link.idHash, createdAt: 2_000 });
      const second = settled(q1.openDrop({ ...d1, dropLinkIdHash: link.idHash }, 'cd'.repeat(32), POLICY, 2_000));
      await waiters(admin, changed ? 2 : 3);
      await holder.query('COMMIT');
      expect({ revoke: await revoke, change: await change }).toEqual({
        revoke: { ok: true, value: { revoked: true, cancelled: [d0.id] } },
        change: { ok: true, value: { ok: true, value: undefined } },
      });
      // The second drop is refused (the link is revoked) or opened and then cancelled: never an error.
      expect((await second).ok).toBe(true);
    } finally {
      await holder.end();
    }
    // No drop is left uploading through the revoked link, and the ledger adds up.
    const open = await admin.query(
      `SELECT id FROM upload_sessions WHERE drop_link_id_hash = $1 AND state IN ${OPEN_STATE_SQL}`,
      [link.idHash],
    );
    expect(open.rows).toEqual([]);
    const rows = (
      await admin.query<{ account_id: string; reserved: string; open_uploads: number }>(
        'SELECT account_id, reserved, open_uploads FROM quota_accounts WHERE account_id IN ($1, $2) ORDER BY account_id',
        [owner, sponsor],
      )
    ).rows;
    expect(rows.map((x) => [x.account_id, Number(x.reserved), x.open_uploads])).toEqual([
      [owner, 0, 0],
      [sponsor, 0, 0],
    ]);
  }, 30_000);

  it('a password change and a sign-out-everywhere of one account: both finish, neither is chosen to break a deadlock', async () => {
    const [a, b] = [new PgStore(pools[0]!.db), new PgStore(pools[1]!.db)];
    const accountId = uid('0190a300');
    expect(
      await a.createAccount({
        id: accountId,
        address: `${accountId}@example.org`,
        addressKey: `${accountId}@example.org`,
        passwordHash: 'h',
        displayName: null,
        createdAt: 1,
        lockedAt: null,
        credentialsChangedAt: null,
      }),
    ).toBe('created');
    const session = (n: number) => ({
      id: uid('0190a301'),
      accountId,
      tokenHash: String(n).repeat(64),
      cohortHash: null,
      createdAt: 10,
      refreshedAt: 10,
      lastUsedAt: 10,
      accessFloor: 10,
      closedAt: null,
      method: 'password' as const,
      authenticatedAt: 10,
    });
    const [mine, other] = [session(1), session(2)];
    for (const s of [mine, other]) expect(await a.openSession(s, null)).toBe(true);

    // A third connection holds the account's row: the sign-out-everywhere waits for it, and the
    // password change (on another connection) arrives meanwhile.
    const holder = new pg.Client({ connectionString: scratch.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
      const everywhere = settled(a.closeAllSessions(accountId, 20));
      await waiters(admin, 1);
      const change = settled(
        b.changePassword({
          accountId,
          passwordHash: 'h2',
          sessionId: mine.id,
          tokenHash: 'f'.repeat(64),
          at: 21,
          credentialsChangedAt: null,
        }),
      );
      await waiters(admin, 2);
      await holder.query('COMMIT');
      // The sign-out went first (it queued first) and closed the caller's session too: the change finds it closed.
      expect({ everywhere: await everywhere, change: await change }).toEqual({
        everywhere: { ok: true, value: 2 },
        change: { ok: true, value: false },
      });
    } finally {
      await holder.end();
    }
  }, 30_000);

  it('~8 s of mixed writers on two sponsors, their payees and sponsored accounts: no deadlock, no error, the ledger adds up', async () => {
    // Keys chosen so that payees sort on both sides of their sponsors.
    const S = '0190b000-0000-7000-8000-000000000001';
    const S2 = '0190c000-0000-7000-8000-000000000001';
    const K1 = '0190a000-0000-7000-8000-000000000001';
    const K2 = '0190f000-0000-7000-8000-000000000001';
    const P1 = '0190a800-0000-7000-8000-000000000001';
    const P2 = '0190d800-0000-7000-8000-000000000001';
    const stores = pools.map((p) => ({
      q: new PgQuotaStore(p.db),
      s: new PgSponsorshipStore(p.db),
      l: new PgLinkStore(p.db),
    }));
    const first = stores[0]!;
    for (const k of [K1, K2])
      expect(await first.s.createSponsoredAccount({ account: sponsoredAccount(k), sponsorId: S })).toEqual({
        ok: true,
        value: undefined,
      });
    const links = [uploadLink(K1), uploadLink(K2), uploadLink(P1)];
    for (const l of links) await first.l.createLink(l);

    const start = Date.now();
    const clock = (): number => 1_000_000 + (Date.now() - start) * 10;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
    const uploaders = [S, S2, K1, K2, P1, P2];
    const assets: { id: string; owner: string }[] = [];
    const errors = new Map<string, number>();
    const ops = new Map<string, number>();

    async function step(st: (typeof stores)[number], at: { op: string }): Promise<void> {
      const now = clock();
      const roll = Math.random();
      if (roll < 0.3) {
        ops.set('upload', (ops.get('upload') ?? 0) + 1);
        const who = pick(uploaders);
        const size = 1 + Math.floor(Math.random() * 50);
        const u = upload(who, {
          declaredSize: size,
          createdAt: now,
          expiresAt: now + Math.floor(Math.random() * 4_000),
        });
        at.op = 'openUpload';
        const o = await st.q.openUpload(u, POLICY, now);
        if (!o.ok || Math.random() < 0.2) return;
        if (Math.random() < 0.1) {
          at.op = 'cancelUpload';
          await st.q.cancelUpload(u.id, POLICY, clock());
          return;
        }
        const h = hash(Math.floor(Math.random() * 40));
        const target = Math.random() < 0.2 && assets.length > 0 ? pick(assets) : null;
        at.op = 'completeUpload';
        const c = await st.q.completeUpload(
          {
            uploadId: u.id,
            contentHash: h,
            size,
            asset: target ? { attachTo: target.id } : { create: { id: u.id, ownerId: who, dropExpiresAt: null } },
          },
          POLICY,
          clock(),
        );
        if (typeof c !== 'string' && !target) assets.push({ id: u.id, owner: who });
      } else if (roll < 0.4) {
        ops.set('drop', (ops.get('drop') ?? 0) + 1);
        const l = pick(links);
        const size = 1 + Math.floor(Math.random() * 50);
        const d = upload(l.ownerId, {
          declaredSize: size,
          dropLinkIdHash: l.idHash,
          createdAt: now,
          expiresAt: now + 5_000,
        });
        at.op = 'openDrop';
        const o = await st.q.openDrop({ ...d, dropLinkIdHash: l.idHash }, 'ab'.repeat(32), POLICY, now);
        if (!o.ok) return;
        at.op = 'completeUpload';
        const c = await st.q.completeUpload(
          {
            uploadId: d.id,
            contentHash: hash(Math.floor(Math.random() * 40)),
            size,
            asset: {
              create: { id: d.id, ownerId: l.ownerId, dropExpiresAt: clock() + Math.floor(Math.random() * 3_000) },
            },
          },
          POLICY,
          clock(),
        );
        if (typeof c === 'string') return;
        assets.push({ id: d.id, owner: l.ownerId });
        const r = Math.random();
        at.op = r < 0.2 ? 'adoptDrop' : 'discardDrop';
        if (r < 0.2) await st.q.adoptDrop(d.id, clock());
        else if (r < 0.3) await st.q.discardDrop(d.id);
      } else if (roll < 0.6) {
        ops.set('metadata', (ops.get('metadata') ?? 0) + 1);
        if (assets.length === 0) return;
        const a = pick(assets);
        const actor = Math.random() < 0.7 ? a.owner : pick([S, K1, K2, P1]);
        at.op = 'replaceMetadata';
        await st.q.replaceMetadata(
          {
            assetId: a.id,
            accountId: actor,
            contentHash: hash(Math.floor(Math.random() * 40)),
            size: 1 + Math.floor(Math.random() * 20),
          },
          POLICY,
          now,
        );
      } else if (roll < 0.8) {
        ops.set('trash', (ops.get('trash') ?? 0) + 1);
        if (assets.length === 0) return;
        const a = pick(assets);
        const r = Math.random();
        at.op = r < 0.35 ? 'trashAsset' : r < 0.6 ? 'restoreAsset' : r < 0.85 ? 'purgeAsset' : 'emptyTrash';
        if (r < 0.35) await st.q.trashAsset(a.id, now);
        else if (r < 0.6) await st.q.restoreAsset(a.id, now);
        else if (r < 0.85) await st.q.purgeAsset(a.id, now);
        else
          await st.q.emptyTrash(
            a.owner,
            (await st.q.listTrash(a.owner)).map((t) => t.assetId),
            now,
          );
      } else if (roll < 0.9) {
        ops.set('sponsor', (ops.get('sponsor') ?? 0) + 1);
        if (Math.random() < 0.2) {
          const k = uid(pick(['01900000', '0190bbbb', '0190ffff']));
          at.op = 'createSponsoredAccount';
          await st.s.createSponsoredAccount({ account: sponsoredAccount(k), sponsorId: pick([S, S2]) });
          uploaders.push(k);
        } else {
          at.op = 'setSponsor';
          await st.s.setSponsor(pick([P1, P2]), pick([S, S2, null]));
        }
      } else if (roll < 0.95) {
        ops.set('sweep', (ops.get('sweep') ?? 0) + 1);
        at.op = 'sweep';
        await st.q.sweep(POLICY, now);
      } else {
        ops.set('ledger', (ops.get('ledger') ?? 0) + 1);
        at.op = 'readLedger';
        await st.q.readLedger(pick(uploaders), now);
      }
    }

    const workers = stores.flatMap((st) =>
      Array.from({ length: 3 }, async () => {
        while (Date.now() - start < 8_000) {
          const at = { op: '' };
          try {
            await step(st, at);
          } catch (e) {
            const code = `${at.op}: ${sqlState(e)}`;
            errors.set(code, (errors.get(code) ?? 0) + 1);
          }
        }
      }),
    );
    await Promise.all(workers);
    console.log('lock-order stress: operations', Object.fromEntries(ops), 'errors', Object.fromEntries(errors));
    expect(Object.fromEntries(errors)).toEqual({});

    // The invariant, per payer: the ledger's charges are its stored blobs, its reservations and
    // open count are its sessions in an open state.
    const bad = await admin.query(`
      SELECT q.account_id, q.charged, q.reserved, q.open_uploads, b.n AS blob_bytes, s.n AS open_bytes, s.c AS open_count
      FROM quota_accounts q
      LEFT JOIN (SELECT charged_to, sum(size) AS n FROM blobs GROUP BY charged_to) b ON b.charged_to = q.account_id
      LEFT JOIN (SELECT payer_id, sum(declared_size) AS n, count(*) AS c FROM upload_sessions WHERE state IN ${OPEN_STATE_SQL} GROUP BY payer_id) s ON s.payer_id = q.account_id
      WHERE q.charged <> coalesce(b.n, 0) OR q.reserved <> coalesce(s.n, 0) OR q.open_uploads <> coalesce(s.c, 0)`);
    expect(bad.rows).toEqual([]);
    const orphans = await admin.query(
      `SELECT charged_to FROM blobs WHERE charged_to NOT IN (SELECT account_id FROM quota_accounts)`,
    );
    expect(orphans.rows).toEqual([]);
  }, 60_000);
});
