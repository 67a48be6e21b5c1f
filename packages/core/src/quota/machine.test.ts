import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { admitWrite, nextHardSince, quotaStatus, type LedgerFacts, type WriteKind } from './machine.js';

const DAY = 86_400_000;
const facts = (over: Partial<LedgerFacts> = {}): LedgerFacts => ({ charged: 0, reserved: 0, hardSince: null, suspended: false, limits: { soft: 80, hard: 100 }, ...over });

describe('quota states (contract 3.1)', () => {
  it('follows used = charged + reserved across the thresholds', () => {
    expect(quotaStatus(facts({ charged: 79 }), 0, 14 * DAY)).toMatchObject({ state: 'OK', alerts: [], graceExpiresAt: null });
    expect(quotaStatus(facts({ charged: 60, reserved: 20 }), 0, 14 * DAY)).toMatchObject({ state: 'SoftWarning', used: 80, reserved: 20, alerts: ['quota_soft'] });
    expect(quotaStatus(facts({ charged: 100, hardSince: 5 }), 5, 14 * DAY)).toMatchObject({ state: 'HardExceeded', alerts: ['quota_soft', 'quota_grace_expiring'], graceExpiresAt: 5 + 14 * DAY });
  });
  it('turns GraceExpired only once the hard condition has held longer than the grace window', () => {
    const f = facts({ charged: 120, hardSince: 1000 });
    expect(quotaStatus(f, 1000 + 14 * DAY, 14 * DAY).state).toBe('HardExceeded');
    expect(quotaStatus(f, 1001 + 14 * DAY, 14 * DAY)).toMatchObject({ state: 'GraceExpired', alerts: ['quota_soft'] });
  });
  it('Suspended wins over every threshold', () => {
    expect(quotaStatus(facts({ suspended: true }), 0, DAY).state).toBe('Suspended');
    expect(quotaStatus(facts({ suspended: true, charged: 500, hardSince: 0 }), 30 * DAY, DAY).state).toBe('Suspended');
  });
  it('supports an unlimited hard limit (and soft)', () => {
    const f = facts({ charged: 1e15, limits: { soft: null, hard: null } });
    expect(quotaStatus(f, 0, DAY)).toMatchObject({ state: 'OK', hardLimit: null, softLimit: null });
    expect(admitWrite(quotaStatus(f, 0, DAY), 'upload', 2 ** 52).ok).toBe(true);
  });
  it('hard_since is set on crossing, kept while over, cleared below', () => {
    expect(nextHardSince(facts({ charged: 99 }), 7)).toBeNull();
    expect(nextHardSince(facts({ charged: 100 }), 7)).toBe(7);
    expect(nextHardSince(facts({ charged: 150, hardSince: 3 }), 7)).toBe(3);
    expect(nextHardSince(facts({ charged: 10, hardSince: 3 }), 7)).toBeNull();
    expect(nextHardSince(facts({ charged: 10, hardSince: 3, limits: { soft: null, hard: null } }), 7)).toBeNull();
  });
});

describe('admission: one pure function of (state, kind, delta)', () => {
  const at = (charged: number, hardSince: number | null, suspended = false) => quotaStatus(facts({ charged, hardSince, suspended }), 20 * DAY, 14 * DAY);
  const ok = at(10, null);
  const hard = at(100, 10 * DAY);
  const expired = at(100, 0);
  const suspended = at(10, null, true);
  it('uploads: refused past the hard limit, from HardExceeded on, and when suspended', () => {
    expect(admitWrite(ok, 'upload', 90).ok).toBe(true);
    expect(admitWrite(ok, 'upload', 91)).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admitWrite(hard, 'upload', 1)).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admitWrite(expired, 'upload', 1)).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admitWrite(suspended, 'upload', 1)).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
  });
  it('metadata growth: admitted through HardExceeded, refused in GraceExpired and Suspended', () => {
    expect(admitWrite(hard, 'metadata_update', 50).ok).toBe(true);
    expect(admitWrite(hard, 'metadata_growth', 0).ok).toBe(true);
    expect(admitWrite(expired, 'metadata_update', 1)).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    expect(admitWrite(expired, 'metadata_growth', 0)).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    expect(admitWrite(suspended, 'metadata_growth', 0).ok).toBe(false);
    expect(admitWrite(expired, 'metadata_update', 0).ok).toBe(true);
    expect(admitWrite(expired, 'metadata_update', -20).ok).toBe(true);
  });
  it('deletes, restores, purges and trash-empty are always admitted', () => {
    const always: WriteKind[] = ['delete', 'restore', 'purge', 'trash_empty'];
    fc.assert(
      fc.property(fc.constantFrom(...always), fc.constantFrom(ok, hard, expired, suspended), fc.integer(), (kind, status, delta) => admitWrite(status, kind, delta).ok),
    );
  });
});
