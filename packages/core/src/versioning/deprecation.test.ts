import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideAnnouncement,
  deprecationNotice,
  effectiveWindow,
  pendingAnnouncements,
  type DeprecationAnnouncement,
} from './deprecation.js';

const BUILD = { min: '2026-03-01', max: '2026-11-01' };
const DAY = 86_400_000;
const NOTICE = 90 * DAY;
const T0 = Date.parse('2026-06-01T00:00:00Z');

/** Versions around and inside the build window, as real calendar dates. */
const version = fc
  .date({ min: new Date('2026-01-01'), max: new Date('2027-03-01'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
const announcement: fc.Arbitrary<DeprecationAnnouncement> = fc
  .record({
    v: version,
    announced: fc.integer({ min: 0, max: 400 * DAY }),
    lead: fc.integer({ min: 0, max: 200 * DAY }),
  })
  .map(({ v, announced, lead }) => ({
    minProtocolVersion: v,
    announcedAt: T0 + announced,
    effectiveAt: T0 + announced + lead,
  }));
const instant = fc.integer({ min: 0, max: 800 * DAY }).map((d) => T0 + d);

/** The reference reading of the rule, written plainly: the largest Min among those in effect. */
function referenceMin(list: readonly DeprecationAnnouncement[], now: number): string {
  const inForce = [BUILD.min, ...list.filter((a) => a.effectiveAt <= now).map((a) => a.minProtocolVersion)].sort();
  const top = inForce[inForce.length - 1]!;
  return top > BUILD.max ? BUILD.max : top;
}

describe('effectiveWindow', () => {
  it('is the build window when nothing is announced', () => {
    expect(effectiveWindow(BUILD, [], T0)).toEqual(BUILD);
  });
  it('switches at the effective instant exactly, not a millisecond before', () => {
    const a = { minProtocolVersion: '2026-07-01', announcedAt: T0, effectiveAt: T0 + NOTICE };
    expect(effectiveWindow(BUILD, [a], T0 + NOTICE - 1).min).toBe(BUILD.min);
    expect(effectiveWindow(BUILD, [a], T0 + NOTICE)).toEqual({ min: '2026-07-01', max: BUILD.max });
  });
  it('matches the reference at every instant', () => {
    fc.assert(
      fc.property(fc.array(announcement, { maxLength: 8 }), instant, (list, now) => {
        const w = effectiveWindow(BUILD, list, now);
        expect(w.min).toBe(referenceMin(list, now));
        expect(w.max).toBe(BUILD.max);
      }),
    );
  });
  it('never lowers the Min as time passes, never goes below the build Min nor above the Max', () => {
    fc.assert(
      fc.property(fc.array(announcement, { maxLength: 8 }), instant, instant, (list, t1, t2) => {
        const [early, late] = t1 <= t2 ? [t1, t2] : [t2, t1];
        const a = effectiveWindow(BUILD, list, early);
        const b = effectiveWindow(BUILD, list, late);
        expect(a.min <= b.min).toBe(true);
        for (const w of [a, b]) {
          expect(w.min >= BUILD.min && w.min <= w.max && w.max === BUILD.max).toBe(true);
        }
      }),
    );
  });
  it('does not depend on the order announcements are listed in', () => {
    fc.assert(
      fc.property(fc.array(announcement, { maxLength: 8 }), instant, (list, now) => {
        expect(effectiveWindow(BUILD, [...list].reverse(), now)).toEqual(effectiveWindow(BUILD, list, now));
      }),
    );
  });
});

describe('decideAnnouncement', () => {
  const policy = { build: BUILD, noticeMs: NOTICE };
  it('takes an announcement exactly the notice period away and refuses one a millisecond sooner', () => {
    const a = { minProtocolVersion: '2026-06-01', announcedAt: T0, effectiveAt: T0 + NOTICE };
    expect(decideAnnouncement([], a, policy)).toEqual({ ok: true, value: a });
    expect(decideAnnouncement([], { ...a, effectiveAt: T0 + NOTICE - 1 }, policy)).toMatchObject({
      ok: false,
      code: 'error.deprecation.too_soon',
    });
  });
  it('refuses a malformed version, one above the Max, and one that would not raise the Min', () => {
    const at = { announcedAt: T0, effectiveAt: T0 + NOTICE };
    expect(decideAnnouncement([], { ...at, minProtocolVersion: '2026-02-30' }, policy)).toMatchObject({
      ok: false,
      code: 'error.deprecation.invalid',
    });
    expect(decideAnnouncement([], { ...at, minProtocolVersion: '2026-11-02' }, policy)).toMatchObject({
      ok: false,
      code: 'error.deprecation.invalid',
    });
    expect(decideAnnouncement([], { ...at, minProtocolVersion: BUILD.min }, policy)).toMatchObject({
      ok: false,
      code: 'error.deprecation.invalid',
    });
    const first = { minProtocolVersion: '2026-08-01', announcedAt: T0, effectiveAt: T0 + NOTICE };
    expect(
      decideAnnouncement(
        [first],
        { minProtocolVersion: '2026-07-01', announcedAt: T0, effectiveAt: T0 + NOTICE + DAY },
        policy,
      ),
    ).toMatchObject({ ok: false, code: 'error.deprecation.invalid' });
    // An older cut-off that lands before the newer one still raises the Min for a while: admitted.
    expect(
      decideAnnouncement(
        [first],
        { minProtocolVersion: '2026-07-01', announcedAt: T0 - DAY, effectiveAt: T0 + NOTICE - DAY },
        policy,
      ).ok,
    ).toBe(true);
  });
  it('admitted announcements give no client less than the notice period: the Min at any instant before now + notice is unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(announcement, { maxLength: 6 }),
        announcement,
        fc.integer({ min: 0, max: NOTICE - 1 }),
        (existing, candidate, into) => {
          const decided = decideAnnouncement(existing, candidate, policy);
          if (!decided.ok) return;
          const now = candidate.announcedAt + into;
          expect(effectiveWindow(BUILD, [...existing, candidate], now)).toEqual(effectiveWindow(BUILD, existing, now));
          // ...and from its instant on, the Min is at least the announced version, never above Max.
          const at = effectiveWindow(BUILD, [...existing, candidate], candidate.effectiveAt);
          expect(at.min >= candidate.minProtocolVersion && at.min <= BUILD.max).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('pendingAnnouncements and deprecationNotice', () => {
  const a1 = { minProtocolVersion: '2026-06-01', announcedAt: T0, effectiveAt: T0 + NOTICE };
  const a2 = { minProtocolVersion: '2026-09-01', announcedAt: T0 + DAY, effectiveAt: T0 + 2 * NOTICE };
  it('lists only announcements not yet in effect, soonest first', () => {
    expect(pendingAnnouncements([a2, a1], T0)).toEqual([a1, a2]);
    expect(pendingAnnouncements([a2, a1], T0 + NOTICE)).toEqual([a2]);
    expect(pendingAnnouncements([a2, a1], T0 + 2 * NOTICE)).toEqual([]);
  });
  it('names the soonest pending cut-off below which the request version falls', () => {
    expect(deprecationNotice('2026-05-01', [a2, a1], T0)).toEqual(a1);
    expect(deprecationNotice('2026-07-01', [a2, a1], T0)).toEqual(a2);
    expect(deprecationNotice('2026-09-01', [a2, a1], T0)).toBeNull();
    expect(deprecationNotice('2026-05-01', [a2, a1], T0 + NOTICE)).toEqual(a2);
  });
  it('agrees with the window: a noticed version is admitted now and below the Min at the sunset', () => {
    fc.assert(
      fc.property(fc.array(announcement, { maxLength: 6 }), version, instant, (list, v, now) => {
        const n = deprecationNotice(v, list, now);
        if (n === null) return;
        expect(n.effectiveAt > now).toBe(true);
        expect(v < effectiveWindow(BUILD, list, n.effectiveAt).min || n.minProtocolVersion > BUILD.max).toBe(true);
      }),
    );
  });
});
