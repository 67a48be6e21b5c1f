import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import type { NewUpload, UploadKind } from '../ports/upload-sessions.js';
import { emptyLedgerRecord, payerIdOf } from '../quota/ledger-rules.js';
import type { QuotaPolicy } from '../quota/machine.js';
import type { LinkRecord } from '../ports/link-store.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { type CompletionFacts, decideCompletion, decideOpen, decideOpenGroup, peerKey } from './decisions.js';

const policy: QuotaPolicy = {
  defaults: { soft: 800, hard: 1_000 },
  graceMs: 10_000,
  federatedShare: 0.25,
  maxOpenUploads: 3,
  followUpMs: 5_000,
  followUpOverdraft: 300,
};
const ACCOUNTS = ['a', 'b', 'c', 's'];
const HASHES = ['h1', 'h2', 'h3'];

/** Rows for a, b, c (some sponsored by s, which may also upload), with varied limits and states. */
const accountsArb = fc
  .tuple(
    ...ACCOUNTS.map((id) =>
      fc.record({
        charged: fc.integer({ min: 0, max: 1_200 }),
        reserved: fc.integer({ min: 0, max: 600 }),
        custom: fc.option(fc.integer({ min: 100, max: 2_000 })),
        hardSince: fc.option(fc.integer({ min: 0, max: 50_000 })),
        suspended: fc.boolean(),
        sponsored: id === 's' ? fc.constant(false) : fc.boolean(),
        present: fc.boolean(),
        trashActivityAt: fc.option(fc.integer({ min: 30_000, max: 60_000 })),
      }),
    ),
  )
  .map((specs) => {
    const m = new Map<string, QuotaAccountRecord>();
    specs.forEach((r, i) => {
      const id = ACCOUNTS[i]!;
      if (!r.present) return;
      m.set(id, {
        accountId: id,
        charged: r.charged,
        reserved: r.reserved,
        limits: r.custom === null ? null : { soft: Math.floor(r.custom * 0.8), hard: r.custom },
        hardSince: r.hardSince,
        suspendedAt: r.suspended ? 1 : null,
        sponsorId: r.sponsored ? 's' : null,
        trashActivityAt: r.trashActivityAt,
      });
    });
    return m;
  });

const requestsArb = fc.array(
  fc.record({
    uploaderId: fc.constantFrom(...ACCOUNTS),
    kind: fc.constantFrom<UploadKind>('original', 'provenance', 'metadata'),
    declaredSize: fc.integer({ min: 1, max: 500 }),
    contentHash: fc.option(fc.constantFrom(...HASHES)),
    dt: fc.integer({ min: 0, max: 20_000 }),
  }),
  { maxLength: 12 },
);

describe('decideOpenGroup', () => {
  it('decides a group exactly as one-at-a-time openings in that order, each seeing the ones before', () => {
    fc.assert(
      fc.property(accountsArb, fc.subarray(HASHES), requestsArb, (accounts, stored, specs) => {
        const requests = specs.map((r, i) => {
          const now = 40_000 + r.dt;
          const request: NewUpload = {
            id: `u${i}`,
            uploaderId: r.uploaderId,
            kind: r.kind,
            declaredSize: r.declaredSize,
            contentHash: r.contentHash,
            sourcePeer: null,
            albumId: null,
            intentId: null,
            dropLinkIdHash: null,
            createdAt: now,
            expiresAt: now + 1_000,
          };
          return { request, now };
        });
        const group = decideOpenGroup(
          { accounts, openSessions: new Map(), fromPeer: new Map(), links: new Map() },
          requests,
          policy,
        );

        // The reference: decideOpen one request at a time, writing each plan before the next.
        const rows = new Map(accounts);
        const open = new Map<string, number>();
        const row = (id: string) => rows.get(id) ?? emptyLedgerRecord(id);
        const expected = requests.map(({ request, now }) => {
          const uploader = row(request.uploaderId);
          const payer = row(payerIdOf(uploader));
          // Whether the hash is stored never enters the decision (a merge needs the bytes, at finalize).
          void stored;
          const plan = decideOpen(
            { uploader, payer, openSessions: open.get(payer.accountId) ?? 0, fromPeer: 0, link: null },
            request,
            policy,
            now,
          );
          if (plan.ok) open.set(payer.accountId, (open.get(payer.accountId) ?? 0) + 1);
          if (plan.ok)
            rows.set(payer.accountId, {
              ...payer,
              reserved: payer.reserved + plan.value.reserve,
              hardSince: plan.value.hardSince,
            });
          return plan;
        });
        expect(group.decisions).toEqual(expected);

        // What the group says to write leaves every payer's row where the sequence left it.
        for (const [id, change] of group.payers) {
          const before = accounts.get(id) ?? emptyLedgerRecord(id);
          expect(before.reserved + change.reserve).toBe(row(id).reserved);
          expect(change.hardSince).toBe(row(id).hardSince);
        }
        // And no row the sequence moved is missing from it.
        for (const [id, r] of rows) {
          const before = accounts.get(id) ?? emptyLedgerRecord(id);
          if (r.reserved !== before.reserved || r.hardSince !== before.hardSince)
            expect(group.payers.has(id)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("guest drops may take only half of the payer's open-session places; the payer's own uploads may take them all", () => {
    const wide: QuotaPolicy = { ...policy, defaults: { soft: null, hard: null }, maxOpenUploads: 4 };
    const payer = emptyLedgerRecord('a');
    const link = {
      idHash: 'l1',
      sealedId: 'sealed',
      ownerId: 'a',
      kind: 'upload' as const,
      albumId: 'al',
      assetIds: [],
      wrappedKey: null,
      sealKey: 'k',
      maxBytes: null,
      acceptedBytes: 0,
      createdAt: 0,
      expiresAt: null,
      revokedAt: null,
    };
    const request = (dropLinkIdHash: string | null): NewUpload => ({
      id: 'u',
      uploaderId: 'a',
      kind: 'original',
      declaredSize: 1,
      contentHash: null,
      sourcePeer: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash,
      createdAt: 0,
      expiresAt: 1_000,
    });
    const open = (n: number, dropLinkIdHash: string | null) =>
      decideOpen(
        { uploader: payer, payer, openSessions: n, fromPeer: 0, link: dropLinkIdHash === null ? null : link },
        request(dropLinkIdHash),
        wide,
        0,
      );
    expect(open(1, 'l1').ok).toBe(true);
    expect(open(2, 'l1')).toMatchObject({ ok: false, code: 'error.request.too_many', data: { max_open_uploads: 2 } });
    expect(open(2, null).ok).toBe(true);
    expect(open(3, null).ok).toBe(true);
    expect(open(4, null)).toMatchObject({ ok: false, code: 'error.request.too_many' });
  });
});

describe('decideOpen: follow-ups', () => {
  const row = (id: string, over: Partial<QuotaAccountRecord> = {}): QuotaAccountRecord => ({
    ...emptyLedgerRecord(id),
    ...over,
  });
  const req = (uploaderId: string, kind: UploadKind, declaredSize: number): NewUpload => ({
    id: `${uploaderId}-${kind}-${declaredSize}`,
    uploaderId,
    kind,
    declaredSize,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: 50_000,
    expiresAt: 60_000,
  });
  const NOW = 50_000;
  it("reads the uploader's trash activity (the asset owner's), and the payer's row for the limits", () => {
    // The sponsor is at its hard limit; the sponsored uploader trashed an asset a moment ago.
    const sponsor = row('s', { charged: 1_000, hardSince: 40_000 });
    const kid = row('k', { sponsorId: 's', trashActivityAt: NOW - 1_000 });
    const plan = decideOpen(
      { uploader: kid, payer: sponsor, openSessions: 0, fromPeer: 0, link: null },
      req('k', 'provenance', 300),
      policy,
      NOW,
    );
    expect(plan).toMatchObject({ ok: true, value: { reserve: 300, session: { payerId: 's', uploaderId: 'k' } } });
    expect(
      decideOpen(
        { uploader: kid, payer: sponsor, openSessions: 0, fromPeer: 0, link: null },
        req('k', 'provenance', 301),
        policy,
        NOW,
      ),
    ).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(
      decideOpen(
        { uploader: kid, payer: sponsor, openSessions: 0, fromPeer: 0, link: null },
        req('k', 'original', 1),
        policy,
        NOW,
      ),
    ).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    // The sponsor's own stamp does not admit the sponsored account's writes, nor its own without one.
    const stampedSponsor = row('s', { charged: 1_000, hardSince: 40_000, trashActivityAt: NOW });
    const quiet = row('k', { sponsorId: 's' });
    expect(
      decideOpen(
        { uploader: quiet, payer: stampedSponsor, openSessions: 0, fromPeer: 0, link: null },
        req('k', 'provenance', 1),
        policy,
        NOW,
      ),
    ).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(
      decideOpen(
        { uploader: stampedSponsor, payer: stampedSponsor, openSessions: 0, fromPeer: 0, link: null },
        req('s', 'metadata', 1),
        policy,
        NOW,
      ).ok,
    ).toBe(true);
  });
  it('a group of follow-ups stops at the overdraft, each seeing the reservations before it', () => {
    const a = row('a', { charged: 1_000, hardSince: 40_000, trashActivityAt: NOW });
    const group = decideOpenGroup(
      { accounts: new Map([['a', a]]), openSessions: new Map(), fromPeer: new Map(), links: new Map() },
      [req('a', 'provenance', 200), req('a', 'metadata', 100), req('a', 'provenance', 1)].map((request) => ({
        request,
        now: NOW,
      })),
      policy,
    );
    expect(group.decisions.map((d) => d.ok)).toEqual([true, true, false]);
    expect(group.payers.get('a')).toMatchObject({ reserve: 300, opened: 2 });
  });
});

describe('decideOpenGroup: what one opening leaves for the next', () => {
  const NOW = 50_000;
  const open = (over: Partial<NewUpload> & Pick<NewUpload, 'id'>): { request: NewUpload; now: number } => ({
    request: {
      uploaderId: 'a',
      kind: 'original',
      declaredSize: 100,
      contentHash: null,
      sourcePeer: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash: null,
      createdAt: NOW,
      expiresAt: NOW + 1_000,
      ...over,
    },
    now: NOW,
  });
  const wide: QuotaPolicy = { ...policy, maxOpenUploads: 100 };
  const empty = { accounts: new Map(), openSessions: new Map(), fromPeer: new Map(), links: new Map() };

  it("federated fills from one peer each see the bytes of the fills before them; another peer's budget is its own", () => {
    // Hard limit 1000, share 0.25: 250 bytes per peer, 60 of them already cached from p1.
    const fill = (id: string, peer: string, declaredSize: number) =>
      open({ id, kind: 'federated', sourcePeer: peer, declaredSize });
    const group = decideOpenGroup(
      { ...empty, fromPeer: new Map([[peerKey('a', 'p1'), 60]]) },
      [fill('f1', 'p1', 100), fill('f2', 'p2', 200), fill('f3', 'p1', 90), fill('f4', 'p1', 1), fill('f5', 'p2', 50)],
      wide,
    );
    expect(group.decisions.map((d) => (d.ok ? 'ok' : d.code))).toEqual([
      'ok',
      'ok',
      'ok',
      'error.quota.federated_budget',
      'ok',
    ]);
    expect(group.decisions[3]).toMatchObject({ data: { source_peer: 'p1', budget: 250, spent: 250 } });
    expect(group.decisions[3]).toMatchObject({ detail: expect.stringContaining('federated cache budget') });
    expect(group.payers.get('a')).toMatchObject({ reserve: 440, opened: 4 });
  });

  it("drops into one link each see the bytes the drops before them reserved, up to the link's max_bytes", () => {
    const link: LinkRecord = {
      idHash: 'l1',
      sealedId: 'sealed',
      ownerId: 'a',
      kind: 'upload',
      albumId: 'al',
      assetIds: [],
      wrappedKey: null,
      sealKey: 'k',
      maxBytes: 250,
      acceptedBytes: 50,
      createdAt: 0,
      expiresAt: null,
      revokedAt: null,
    };
    const drop = (id: string, declaredSize: number, dropLinkIdHash = 'l1') =>
      open({ id, declaredSize, dropLinkIdHash });
    const group = decideOpenGroup(
      { ...empty, links: new Map([['l1', link]]) },
      [drop('d1', 100), drop('d2', 100), drop('d3', 1), drop('d4', 5, 'gone')],
      wide,
    );
    expect(group.decisions.map((d) => (d.ok ? d.value.linkAccepts : d.code))).toEqual([
      100,
      100,
      'error.quota.exceeded',
      'error.not_found',
    ]);
    expect(group.decisions[2]).toMatchObject({ data: { max_bytes: 250, declared_size: 1 } });
    // A drop is judged against its own link only: a stored link of another id is no link at all.
    const other = decideOpen(
      { uploader: emptyLedgerRecord('a'), payer: emptyLedgerRecord('a'), openSessions: 0, fromPeer: 0, link },
      drop('d5', 1, 'l2').request,
      wide,
      NOW,
    );
    expect(other).toMatchObject({ ok: false, code: 'error.not_found' });
    // Anything but a drop accepts nothing on any link.
    const plain = decideOpen(
      { uploader: emptyLedgerRecord('a'), payer: emptyLedgerRecord('a'), openSessions: 0, fromPeer: 0, link: null },
      open({ id: 'p1', declaredSize: 30 }).request,
      wide,
      NOW,
    );
    expect(plain).toMatchObject({ ok: true, value: { linkAccepts: 0, reserve: 30 } });
    for (const refused of [other, group.decisions[2], group.decisions[3]])
      if (refused && !refused.ok) expect(refused.detail).toMatch(/link/);

    expect([...group.links]).toEqual([['l1', 200]]);
    expect(group.payers.get('a')).toMatchObject({ reserve: 200, opened: 2 });
  });

  it('open sessions counted by the openings before, per payer', () => {
    const capped: QuotaPolicy = { ...policy, maxOpenUploads: 2 };
    const group = decideOpenGroup(
      { ...empty, openSessions: new Map([['a', 1]]) },
      [
        open({ id: 'u1', declaredSize: 1 }),
        open({ id: 'u2', declaredSize: 1 }),
        open({ id: 'u3', uploaderId: 'b', declaredSize: 1 }),
      ],
      capped,
    );
    expect(group.decisions.map((d) => (d.ok ? 'ok' : d.code))).toEqual(['ok', 'error.request.too_many', 'ok']);
    expect(group.decisions[1]).toMatchObject({ data: { max_open_uploads: 2, retry_after_s: 60 } });
    expect(group.decisions[1]).toMatchObject({ detail: expect.stringContaining('At most 2 upload sessions') });
  });
});

describe('decideCompletion', () => {
  const NOW = 50_000;
  const HASH = 'c'.repeat(64);
  const session = (over: Partial<UploadSessionRecord> = {}): UploadSessionRecord => ({
    id: 'u1',
    uploaderId: 'k',
    payerId: 's',
    kind: 'derivative',
    declaredSize: 100,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    state: 'WaitingForProcessing',
    receivedSize: 90,
    receivedHash: HASH,
    assetId: null,
    createdAt: NOW - 1_000,
    expiresAt: NOW + 1_000,
    ...over,
  });
  const facts = (over: Partial<CompletionFacts> = {}): CompletionFacts => ({
    session: session(),
    storedBlobSize: null,
    attachTarget: 'live',
    payer: { ...emptyLedgerRecord('s'), reserved: 100, charged: 900 },
    ...over,
  });
  const attach = { uploadId: 'u1', contentHash: HASH, size: 90, asset: { attachTo: 'as1' } };

  it('a blob attaches only to an asset that exists and is no pending drop', () => {
    expect(decideCompletion(facts({ attachTarget: null }), attach, policy, NOW)).toBe('asset_missing');
    expect(decideCompletion(facts({ attachTarget: 'pending_drop' }), attach, policy, NOW)).toBe('asset_missing');
    for (const target of ['live', 'trashed'] as const) {
      expect(decideCompletion(facts({ attachTarget: target }), attach, policy, NOW)).toMatchObject({
        outcome: 'completed',
        assetId: 'as1',
        createAsset: null,
        reference: { kind: 'derivative', contentHash: HASH, size: 90 },
      });
    }
  });

  it('only a session in flight completes: unknown, expired and finalized ones are not open', () => {
    expect(decideCompletion(facts({ session: null }), attach, policy, NOW)).toBe('not_open');
    expect(decideCompletion(facts({ session: session({ expiresAt: NOW }) }), attach, policy, NOW)).toBe('not_open');
    expect(decideCompletion(facts({ session: session({ state: 'Completed' }) }), attach, policy, NOW)).toBe('not_open');
  });

  it('a new blob is charged whole to the payer and the reservation released; a stored hash merges and charges nothing', () => {
    const done = decideCompletion(facts(), attach, policy, NOW);
    expect(done).toMatchObject({
      outcome: 'completed',
      session: { state: 'Completed', assetId: 'as1' },
      release: 100,
      newBlob: { contentHash: HASH, size: 90, chargedTo: 's', peer: null },
      federatedRef: null,
    });
    // 900 charged + 90 is below the hard limit of 1000.
    expect(done).toMatchObject({ hardSince: null });
    const over = decideCompletion(
      facts({ payer: { ...emptyLedgerRecord('s'), reserved: 100, charged: 950 } }),
      attach,
      policy,
      NOW,
    );
    expect(over).toMatchObject({ hardSince: NOW });
    const merged = decideCompletion(facts({ storedBlobSize: 80 }), attach, policy, NOW);
    expect(merged).toMatchObject({
      outcome: 'merged',
      session: { state: 'Merged' },
      release: 100,
      newBlob: null,
      reference: { size: 80 },
      hardSince: null,
    });
  });

  it('a drop creates a pending asset, an original a live one; a federated fill creates none and is cached for its payer', () => {
    const create = (dropExpiresAt: number | null) => ({
      uploadId: 'u1',
      contentHash: HASH,
      size: 90,
      asset: { create: { id: 'n1', ownerId: 'o', dropExpiresAt } },
    });
    expect(
      decideCompletion(facts({ session: session({ kind: 'original' }) }), create(null), policy, NOW),
    ).toMatchObject({
      assetId: 'n1',
      createAsset: { id: 'n1', ownerId: 'o', uploaderId: 'k', state: 'live', dropExpiresAt: null },
      reference: { kind: 'original' },
    });
    expect(
      decideCompletion(facts({ session: session({ kind: 'original' }) }), create(NOW + 5), policy, NOW),
    ).toMatchObject({
      createAsset: { state: 'pending_drop', dropExpiresAt: NOW + 5 },
    });
    const fill = decideCompletion(
      facts({ session: session({ kind: 'federated', sourcePeer: 'p1' }), attachTarget: null }),
      { uploadId: 'u1', contentHash: HASH, size: 90, asset: null },
      policy,
      NOW,
    );
    expect(fill).toMatchObject({
      outcome: 'completed',
      assetId: null,
      createAsset: null,
      reference: null,
      newBlob: { peer: 'p1', chargedTo: 's' },
      federatedRef: { receiver: 's', peer: 'p1', contentHash: HASH },
    });
  });
});
