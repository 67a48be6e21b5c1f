import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import type { NewUpload, UploadKind } from '../ports/upload-sessions.js';
import { emptyLedgerRecord, payerIdOf } from '../quota/ledger-rules.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { decideOpen, decideOpenGroup } from './decisions.js';

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
