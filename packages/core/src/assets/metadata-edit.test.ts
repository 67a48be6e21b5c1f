import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AssetState } from '../ports/asset-catalog.js';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import { emptyLedgerRecord, ledgerFacts, settledHardSince } from '../quota/ledger-rules.js';
import { admitWrite, quotaStatus, type QuotaPolicy } from '../quota/machine.js';
import { decideMetadataReplace, type MetadataReplaceFacts } from './metadata-edit.js';

const A = 'a';
const S = 's';
const POLICY: QuotaPolicy = {
  defaults: { soft: 800, hard: 1_000 },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 10,
  followUpMs: 500,
  followUpOverdraft: 50,
};
const row = (over: Partial<QuotaAccountRecord> = {}): QuotaAccountRecord => ({ ...emptyLedgerRecord(A), ...over });
const facts = (over: Partial<MetadataReplaceFacts> = {}): MetadataReplaceFacts => ({
  assetState: 'live',
  metadataSizes: [],
  account: row(),
  payer: row(),
  storedBlobSize: null,
  ...over,
});
const H = 'ab'.repeat(32);

describe('decideMetadataReplace', () => {
  it('refuses an asset that is not live (or gone) with error.conflict, before any quota rule', () => {
    for (const assetState of ['trashed', 'pending_drop', null] as (AssetState | null)[]) {
      expect(
        decideMetadataReplace(
          facts({ assetState, payer: row({ suspendedAt: 1 }) }),
          { contentHash: H, size: 1 },
          POLICY,
          10,
        ),
      ).toMatchObject({ ok: false, code: 'error.conflict' });
    }
  });

  it("charges the new blob to the acting account's payer, references the stored blob's size, and settles hard_since", () => {
    const kid = row({ accountId: 'k', sponsorId: S });
    const sponsor = row({ accountId: S, charged: 990 });
    expect(
      decideMetadataReplace(
        facts({ account: kid, payer: sponsor, metadataSizes: [4] }),
        { contentHash: H, size: 10 },
        POLICY,
        7,
      ),
    ).toEqual({
      ok: true,
      value: {
        payerId: S,
        newBlob: { contentHash: H, size: 10, chargedTo: S },
        reference: { kind: 'metadata', contentHash: H, size: 10 },
        hardSince: 7,
      },
    });
    // Stored already (a merge): nothing charged, the reference has the stored size.
    expect(
      decideMetadataReplace(
        facts({ account: kid, payer: sponsor, storedBlobSize: 10 }),
        { contentHash: H, size: 10 },
        POLICY,
        7,
      ),
    ).toMatchObject({
      ok: true,
      value: { newBlob: null, reference: { size: 10 }, hardSince: null },
    });
  });

  it("is admitWrite's answer for a metadata_update of new minus old that charges the new blob whole, on the payer's settled row, whether the hash is stored or not", () => {
    fc.assert(
      fc.property(
        fc.record({
          charged: fc.integer({ min: 0, max: 1_200 }),
          reserved: fc.integer({ min: 0, max: 200 }),
          hardSince: fc.option(fc.integer({ min: 0, max: 3_000 })),
          suspended: fc.boolean(),
          trashActivityAt: fc.option(fc.integer({ min: 0, max: 3_000 })),
          old: fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 2 }),
          size: fc.integer({ min: 0, max: 100 }),
          stored: fc.boolean(),
          now: fc.integer({ min: 0, max: 3_000 }),
        }),
        (c) => {
          const payer = row({
            charged: c.charged,
            reserved: c.reserved,
            hardSince: c.hardSince,
            suspendedAt: c.suspended ? 0 : null,
            trashActivityAt: c.trashActivityAt,
          });
          const got = decideMetadataReplace(
            facts({ account: payer, payer, metadataSizes: c.old, storedBlobSize: c.stored ? c.size : null }),
            { contentHash: H, size: c.size },
            POLICY,
            c.now,
          );
          const settled = { ...payer, hardSince: settledHardSince(payer, POLICY, c.now) };
          const oldSize = c.old.reduce((n, s) => n + s, 0);
          const want = admitWrite(
            quotaStatus(ledgerFacts(settled, POLICY), c.now, POLICY.graceMs),
            {
              kind: 'metadata_update',
              delta: c.size - oldSize,
              charge: c.size,
              uploadKind: null,
              trashActivityAt: c.trashActivityAt,
            },
            POLICY,
            c.now,
          );
          expect(got.ok).toBe(want.ok);
          if (!got.ok && !want.ok) expect(got).toEqual(want);
        },
      ),
    );
  });
});
