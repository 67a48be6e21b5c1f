import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { UploadKind } from '../ports/upload-sessions.js';
import {
  admitWrite,
  DEFAULT_QUOTA_POLICY,
  effectiveLimits,
  isFollowUp,
  nextHardSince,
  quotaStatus,
  type LedgerFacts,
  type WriteKind,
  type WriteRequest,
} from './machine.js';

const DAY = 86_400_000;
const facts = (over: Partial<LedgerFacts> = {}): LedgerFacts => ({
  charged: 0,
  reserved: 0,
  hardSince: null,
  suspended: false,
  limits: { soft: 80, hard: 100 },
  ...over,
});
const FOLLOW_UP = { followUpMs: 15 * 60_000, followUpOverdraft: 16 };
/** A write by an account that never trashed, restored, purged or emptied its trash. */
const w = (
  kind: WriteKind,
  delta: number,
  uploadKind: UploadKind | null = kind === 'upload' ? 'original' : null,
  trashActivityAt: number | null = null,
): WriteRequest => ({
  kind,
  delta,
  uploadKind,
  trashActivityAt,
});
/** Admission at `now` (20 days in, as the statuses below are derived). */
const admit = (status: Parameters<typeof admitWrite>[0], write: WriteRequest, now = 20 * DAY) =>
  admitWrite(status, write, FOLLOW_UP, now);

describe('quota states (spec §9.3)', () => {
  it('follows used = charged + reserved across the thresholds', () => {
    expect(quotaStatus(facts({ charged: 79 }), 0, 14 * DAY)).toMatchObject({
      state: 'OK',
      alerts: [],
      graceExpiresAt: null,
    });
    expect(quotaStatus(facts({ charged: 60, reserved: 20 }), 0, 14 * DAY)).toMatchObject({
      state: 'SoftWarning',
      used: 80,
      reserved: 20,
      alerts: ['quota_soft'],
    });
    expect(quotaStatus(facts({ charged: 100, hardSince: 5 }), 5, 14 * DAY)).toMatchObject({
      state: 'HardExceeded',
      alerts: ['quota_soft', 'quota_grace_expiring'],
      graceExpiresAt: 5 + 14 * DAY,
    });
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
  it('a suspended account over its hard limit still hears that its grace is running out, until it has', () => {
    const over = facts({ suspended: true, charged: 100, hardSince: 1_000 });
    expect(quotaStatus(over, 1_000 + DAY, DAY)).toMatchObject({
      state: 'Suspended',
      alerts: ['quota_soft', 'quota_grace_expiring'],
      graceExpiresAt: 1_000 + DAY,
    });
    expect(quotaStatus(over, 1_001 + DAY, DAY).alerts).toEqual(['quota_soft']);
    expect(quotaStatus(facts({ suspended: true, charged: 100 }), 5, DAY).alerts).toEqual([
      'quota_soft',
      'quota_grace_expiring',
    ]);
    expect(quotaStatus(facts({ suspended: true, charged: 90 }), 5, DAY)).toMatchObject({
      alerts: ['quota_soft'],
      graceExpiresAt: null,
    });
  });
  it('supports an unlimited hard limit (and soft)', () => {
    const f = facts({ charged: 1e15, limits: { soft: null, hard: null } });
    expect(quotaStatus(f, 0, DAY)).toMatchObject({ state: 'OK', hardLimit: null, softLimit: null });
    expect(admit(quotaStatus(f, 0, DAY), w('upload', 2 ** 52)).ok).toBe(true);
  });
  it('hard_since is set on crossing, kept while over, cleared below', () => {
    expect(nextHardSince(facts({ charged: 99 }), 7)).toBeNull();
    expect(nextHardSince(facts({ charged: 100 }), 7)).toBe(7);
    expect(nextHardSince(facts({ charged: 150, hardSince: 3 }), 7)).toBe(3);
    expect(nextHardSince(facts({ charged: 10, hardSince: 3 }), 7)).toBeNull();
    expect(nextHardSince(facts({ charged: 10, hardSince: 3, limits: { soft: null, hard: null } }), 7)).toBeNull();
  });
});

describe('admission: one pure function of (state, write, policy, now)', () => {
  const at = (charged: number, hardSince: number | null, suspended = false) =>
    quotaStatus(facts({ charged, hardSince, suspended }), 20 * DAY, 14 * DAY);
  const ok = at(10, null);
  const hard = at(100, 10 * DAY);
  const expired = at(100, 0);
  const suspended = at(10, null, true);
  it('uploads: refused past the hard limit, from HardExceeded on, and when suspended', () => {
    expect(admit(ok, w('upload', 90)).ok).toBe(true);
    expect(admit(ok, w('upload', 91))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admit(hard, w('upload', 1))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admit(expired, w('upload', 1))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(admit(suspended, w('upload', 1))).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
  });
  it('a refusal names the figures it was decided on, and says why', () => {
    const exceeded = admit(hard, w('upload', 7));
    expect(exceeded).toMatchObject({ data: { used: 100, hard_limit: 100, declared_size: 7 } });
    expect(admit(suspended, w('upload', 1))).toMatchObject({ data: { state: 'Suspended' } });
    const grown = admit(expired, w('metadata_growth', 0));
    expect(grown).toMatchObject({ data: { state: 'GraceExpired' } });
    for (const r of [exceeded, admit(suspended, w('upload', 1)), grown]) {
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.detail).toMatch(/\w{3,}/);
    }
    expect(grown).toMatchObject({ detail: expect.stringContaining('GraceExpired') });
  });
  it('metadata growth: admitted through HardExceeded, refused in GraceExpired and Suspended', () => {
    expect(admit(hard, w('metadata_update', 50)).ok).toBe(true);
    expect(admit(hard, w('metadata_growth', 0)).ok).toBe(true);
    expect(admit(expired, w('metadata_update', 1))).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    expect(admit(expired, w('metadata_growth', 0))).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    expect(admit(suspended, w('metadata_growth', 0)).ok).toBe(false);
    expect(admit(expired, w('metadata_update', 0)).ok).toBe(true);
    expect(admit(expired, w('metadata_update', -20)).ok).toBe(true);
  });
});

describe('follow-ups of a delete, restore, purge or trash-empty (spec §9.6)', () => {
  const NOW = 20 * DAY;
  const WINDOW = FOLLOW_UP.followUpMs;
  const at = (charged: number, hardSince: number | null, suspended = false) =>
    quotaStatus(facts({ charged, hardSince, suspended }), NOW, 14 * DAY);
  const hard = at(100, 10 * DAY);
  const expired = at(100, 0);
  const suspended = at(100, 0, true);
  const soft = at(90, null);
  const provenance = (delta: number, trashed: number | null = NOW - 1) => w('upload', delta, 'provenance', trashed);
  it("a provenance or metadata upload, or a metadata edit, soon after the account's trash activity is a follow-up; nothing else is", () => {
    expect(isFollowUp(provenance(1), FOLLOW_UP, NOW)).toBe(true);
    expect(isFollowUp(w('upload', 1, 'metadata', NOW), FOLLOW_UP, NOW)).toBe(true);
    expect(isFollowUp(w('metadata_update', 5, null, NOW), FOLLOW_UP, NOW)).toBe(true);
    for (const kind of ['original', 'derivative', 'federated'] as const)
      expect(isFollowUp(w('upload', 1, kind, NOW), FOLLOW_UP, NOW)).toBe(false);
    expect(isFollowUp(w('metadata_growth', 0, null, NOW), FOLLOW_UP, NOW)).toBe(false);
    expect(isFollowUp(w('upload', 1, null, NOW), FOLLOW_UP, NOW)).toBe(false);
    expect(isFollowUp(provenance(1, null), FOLLOW_UP, NOW)).toBe(false);
  });
  it('the window: admitted up to followUpMs after the trash activity inclusive, refused one millisecond later', () => {
    for (const status of [hard, expired]) {
      expect(admit(status, provenance(1, NOW - WINDOW), NOW).ok).toBe(true);
      expect(admit(status, provenance(1, NOW - WINDOW - 1), NOW)).toMatchObject({
        ok: false,
        code: 'error.quota.exceeded',
      });
      expect(admit(status, provenance(1, null), NOW)).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    }
    expect(admit(expired, w('metadata_update', 10, null, NOW - WINDOW), NOW).ok).toBe(true);
    expect(admit(expired, w('metadata_update', 10, null, NOW - WINDOW - 1), NOW)).toMatchObject({
      ok: false,
      code: 'error.quota.write_refused',
    });
  });
  it('the overdraft: used + delta may reach hard limit + followUpOverdraft, not one byte more', () => {
    // used 100, hard 100, overdraft 16.
    for (const status of [hard, expired]) {
      expect(admit(status, provenance(16)).ok).toBe(true);
      expect(admit(status, provenance(17))).toMatchObject({
        ok: false,
        code: 'error.quota.exceeded',
        detail: expect.anything(),
      });
      expect(admit(status, w('upload', 16, 'metadata', NOW)).ok).toBe(true);
      expect(admit(status, w('upload', 17, 'metadata', NOW)).ok).toBe(false);
    }
    expect(admit(expired, w('metadata_update', 16, null, NOW)).ok).toBe(true);
    expect(admit(expired, w('metadata_update', 17, null, NOW))).toMatchObject({
      ok: false,
      code: 'error.quota.write_refused',
    });
    // Below the hard limit the same line holds for a follow-up that would cross it.
    expect(admit(soft, provenance(26)).ok).toBe(true);
    expect(admit(soft, provenance(27))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    // Already past the line (operator lowered the limit): nothing more.
    expect(admit(at(200, 0), provenance(1))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
  });
  it('a metadata edit is held to the line by what it charges now (its new blob whole), not by new minus old', () => {
    // used 100, hard 100, overdraft 16: an edit of 10 bytes over 5 grows by 5 but charges 10 now
    // (the old blob is credited only by the sweep), so 17 of charge is one byte past the line.
    expect(admit(expired, { ...w('metadata_update', 5, null, NOW), charge: 16 }).ok).toBe(true);
    expect(admit(expired, { ...w('metadata_update', 5, null, NOW), charge: 17 })).toMatchObject({
      ok: false,
      code: 'error.quota.write_refused',
    });
  });
  it('Suspended refuses follow-ups as it refuses every upload and every metadata growth', () => {
    expect(admit(suspended, provenance(1))).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    expect(admit(suspended, w('metadata_update', 1, null, NOW))).toMatchObject({
      ok: false,
      code: 'error.quota.write_refused',
    });
  });
  it("the deployment's defaults: a 15-minute window and a 16 MiB overdraft over the 10 GiB hard limit", () => {
    const MiB = 1024 ** 2;
    const GiB = 1024 ** 3;
    const limits = effectiveLimits(null, DEFAULT_QUOTA_POLICY);
    expect(limits).toEqual({ soft: 8 * GiB, hard: 10 * GiB });
    const atHard = quotaStatus(
      facts({ charged: limits.hard!, hardSince: NOW - DAY, limits }),
      NOW,
      DEFAULT_QUOTA_POLICY.graceMs,
    );
    expect(atHard.state).toBe('HardExceeded');
    const byDefault = (write: WriteRequest) => admitWrite(atHard, write, DEFAULT_QUOTA_POLICY, NOW);
    expect(byDefault(provenance(16 * MiB)).ok).toBe(true);
    expect(byDefault(provenance(16 * MiB + 1))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    expect(byDefault(provenance(1, NOW - 15 * 60_000)).ok).toBe(true);
    expect(byDefault(provenance(1, NOW - 15 * 60_000 - 1))).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    // Fourteen days of grace, then GraceExpired.
    const graced = (since: number) =>
      quotaStatus(facts({ charged: limits.hard!, hardSince: since, limits }), NOW, DEFAULT_QUOTA_POLICY.graceMs).state;
    expect(graced(NOW - 14 * DAY)).toBe('HardExceeded');
    expect(graced(NOW - 14 * DAY - 1)).toBe('GraceExpired');
  });
  it('never refuses what the rule by state admits, never admits past hard limit + overdraft, and only widens for follow-ups', () => {
    const status = fc
      .record({ charged: fc.nat(300), hardSince: fc.option(fc.nat(20 * DAY), { nil: null }), suspended: fc.boolean() })
      .map((f) => quotaStatus(facts(f), NOW, 14 * DAY));
    const write = fc.record({
      kind: fc.constantFrom<WriteKind>('upload', 'metadata_update', 'metadata_growth'),
      delta: fc.integer({ min: -50, max: 200 }),
      uploadKind: fc.constantFrom<UploadKind | null>(
        'original',
        'derivative',
        'metadata',
        'provenance',
        'federated',
        null,
      ),
      trashActivityAt: fc.option(fc.integer({ min: NOW - 2 * WINDOW, max: NOW }), { nil: null }),
    });
    fc.assert(
      fc.property(status, write, (st, wr) => {
        const without = admit(st, { ...wr, trashActivityAt: null });
        const verdict = admit(st, wr);
        if (without.ok) expect(verdict.ok).toBe(true);
        if (verdict.ok && !without.ok) {
          expect(isFollowUp(wr, FOLLOW_UP, NOW)).toBe(true);
          expect(st.state).not.toBe('Suspended');
          expect(st.used + wr.delta).toBeLessThanOrEqual(st.hardLimit! + FOLLOW_UP.followUpOverdraft);
        }
        if (!verdict.ok) expect(verdict).toEqual(without); // a refusal is the rule by state's own
      }),
    );
  });
});
