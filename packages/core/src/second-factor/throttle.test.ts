import { describe, expect, it } from 'vitest';
import { heldUntil, recordWrongCode, throttleDecision, THROTTLE_KEPT, type TotpThrottleState } from './throttle.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const wrongAt = (times: number[]): TotpThrottleState =>
  times.reduce<TotpThrottleState>((s, t) => recordWrongCode(s, t), { wrongCodesAt: [] });

describe('second-factor throttle rule', () => {
  it('nine wrong codes in an hour hold nothing; the tenth holds for one minute after it', () => {
    const nine = wrongAt([0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => i * 1000));
    expect(heldUntil(nine)).toBeNull();
    expect(throttleDecision(nine, 9000)).toEqual({ held: false });
    const ten = recordWrongCode(nine, 9000);
    expect(heldUntil(ten)).toBe(9000 + MIN);
    expect(throttleDecision(ten, 9000)).toEqual({ held: true, retryAfterS: 60 });
    expect(throttleDecision(ten, 9000 + MIN - 1)).toEqual({ held: true, retryAfterS: 1 });
    expect(throttleDecision(ten, 9000 + MIN)).toEqual({ held: false });
  });

  it('each further wrong code in the hour doubles the delay, capped at one hour', () => {
    let s = wrongAt(Array.from({ length: 10 }, (_, i) => i));
    const delays: number[] = [];
    for (let t = 10; t < 18; t++) {
      s = recordWrongCode(s, t);
      delays.push((heldUntil(s)! - t) / MIN);
    }
    expect(delays).toEqual([2, 4, 8, 16, 32, 60, 60, 60]);
    expect(s.wrongCodesAt).toHaveLength(THROTTLE_KEPT);
  });

  it('someone who waits out every hold gets at most sixteen codes checked in any hour', () => {
    let s: TotpThrottleState = { wrongCodesAt: [] };
    let t = 0;
    const checked: number[] = [];
    while (t < 24 * HOUR) {
      const d = throttleDecision(s, t);
      if (d.held) t += d.retryAfterS * 1000;
      checked.push(t);
      s = recordWrongCode(s, t);
      t += 1;
    }
    for (const at of checked) expect(checked.filter((u) => u >= at && u < at + HOUR).length).toBeLessThanOrEqual(16);
    // About fifteen an hour, sustained: a six-digit code takes years, not minutes.
    expect(checked.length).toBeLessThan(24 * 17);
  });

  it('wrong codes older than the hour before the latest do not count', () => {
    const spread = wrongAt([...Array.from({ length: 9 }, (_, i) => i), HOUR + 9]);
    expect(heldUntil(spread)).toBeNull();
    const within = wrongAt([...Array.from({ length: 9 }, (_, i) => i + 10), HOUR + 9]);
    expect(heldUntil(within)).toBe(HOUR + 9 + MIN);
  });
});
