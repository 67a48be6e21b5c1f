import { describe, expect, it } from 'vitest';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import {
  emptyLedgerRecord,
  ledgerFacts,
  ledgerRecordWith,
  payerIdOf,
  settledHardSince,
  settledLedgerFacts,
} from './ledger-rules.js';
import type { QuotaPolicy } from './machine.js';

const policy: QuotaPolicy = {
  defaults: { soft: 80, hard: 100 },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 10,
  followUpMs: 100,
  followUpOverdraft: 10,
};
const row = (over: Partial<QuotaAccountRecord> = {}): QuotaAccountRecord => ({ ...emptyLedgerRecord('a'), ...over });

describe('ledger rules', () => {
  it('a new row: nothing charged or reserved, default limits, no sponsor, never over, never trashed', () => {
    expect(emptyLedgerRecord('x')).toEqual({
      accountId: 'x',
      charged: 0,
      reserved: 0,
      limits: null,
      hardSince: null,
      suspendedAt: null,
      sponsorId: null,
      trashActivityAt: null,
    });
  });

  it('a sponsored account is paid for by its sponsor, any other by itself', () => {
    expect(payerIdOf(row())).toBe('a');
    expect(payerIdOf(row({ sponsorId: 's' }))).toBe('s');
  });

  it("a row's facts: its own limits when an operator set them, else the defaults; suspended from any instant", () => {
    expect(ledgerFacts(row({ charged: 5, reserved: 7, hardSince: 3 }), policy)).toEqual({
      charged: 5,
      reserved: 7,
      hardSince: 3,
      suspended: false,
      limits: { soft: 80, hard: 100 },
    });
    const own = { soft: null, hard: 50 };
    expect(ledgerFacts(row({ limits: own, suspendedAt: 0 }), policy)).toMatchObject({ suspended: true, limits: own });
  });

  it('hard_since is set when used reaches the hard limit, kept while over, cleared below', () => {
    expect(settledHardSince(row({ charged: 60, reserved: 39 }), policy, 500)).toBeNull();
    expect(settledHardSince(row({ charged: 60, reserved: 40 }), policy, 500)).toBe(500);
    expect(settledHardSince(row({ charged: 60, reserved: 40, hardSince: 7 }), policy, 500)).toBe(7);
    expect(settledHardSince(row({ charged: 10, hardSince: 7 }), policy, 500)).toBeNull();
    expect(settledHardSince(row({ charged: 60, limits: { soft: null, hard: 60 } }), policy, 500)).toBe(500);
    const settled = settledLedgerFacts(row({ charged: 100, hardSince: null }), policy, 500);
    expect(settled).toMatchObject({ charged: 100, hardSince: 500 });
    expect(settledLedgerFacts(row({ charged: 1, hardSince: 9 }), policy, 500).hardSince).toBeNull();
  });

  it('a row with new reservations and hard_since keeps every other field', () => {
    const before = row({
      charged: 3,
      reserved: 4,
      limits: { soft: 1, hard: 2 },
      hardSince: 5,
      suspendedAt: 6,
      sponsorId: 's',
      trashActivityAt: 8,
    });
    expect(ledgerRecordWith(before, 40, null)).toEqual({ ...before, reserved: 40, hardSince: null });
  });
});
