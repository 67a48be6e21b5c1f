import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromHex } from '../encoding/bytes.js';
import {
  attemptsLeft,
  CHALLENGE_TTL_MS,
  challengeOpenedAt,
  codeForStep,
  comparesCode,
  isWellFormedCode,
  judgeChallenge,
  matchCode,
  stepAt,
  transition,
  type TotpState,
} from './machine.js';

interface Vector {
  time: number;
  T: number;
  mode: string;
  totp8: string;
  totp6_derived: string;
}
interface VectorFile {
  secrets_hex: Record<string, string>;
  vectors: Vector[];
  derived_window_cases: {
    codes_by_step: Record<string, string>;
    boundary: { time: number; step: number; code_current: string }[];
    window_at_time_90_step_3: { accept: { step: number; code: string }[]; reject: { step: number; code: string }[] };
    single_use_sequence_last_used_step_initially_none: {
      time: number;
      code: string;
      expect: string;
      last_used_step_after: number;
    }[];
    malformed_inputs_strict_policy: { values: unknown[] };
  };
}

const file = JSON.parse(
  readFileSync(new URL('../../test-vectors/totp-rfc6238.json', import.meta.url), 'utf8'),
) as VectorFile;
const SECRET = fromHex(file.secrets_hex['SHA1']!)!;
const SHA1 = file.vectors.filter((v) => v.mode === 'SHA1');
const W = file.derived_window_cases;
const s = (seconds: number): number => seconds * 1000;

describe('RFC 6238 Appendix B, SHA-1 (6-digit codes)', () => {
  it('has the six SHA-1 rows', () => expect(SHA1).toHaveLength(6));
  for (const v of SHA1) {
    it(`time ${v.time}: step ${v.T}, code ${v.totp6_derived}`, () => {
      expect(stepAt(s(v.time))).toBe(v.T);
      expect(codeForStep(SECRET, v.T)).toBe(v.totp6_derived);
      expect(v.totp8.endsWith(v.totp6_derived)).toBe(true);
      expect(matchCode(SECRET, v.totp6_derived, s(v.time), null)).toEqual({ ok: true, value: v.T });
      // Used once, the same code at the same instant is a replay.
      expect(matchCode(SECRET, v.totp6_derived, s(v.time), v.T).ok).toBe(false);
    });
  }
});

describe('derived window cases', () => {
  it('codes by step (RFC 4226 Appendix D)', () => {
    for (const [step, code] of Object.entries(W.codes_by_step)) expect(codeForStep(SECRET, Number(step))).toBe(code);
  });
  it('step boundaries', () => {
    for (const b of W.boundary) {
      expect(stepAt(s(b.time))).toBe(b.step);
      expect(matchCode(SECRET, b.code_current, s(b.time), null)).toEqual({ ok: true, value: b.step });
    }
  });
  it('one step of drift either side at t = 90 s, no more', () => {
    for (const a of W.window_at_time_90_step_3.accept)
      expect(matchCode(SECRET, a.code, s(90), null)).toEqual({ ok: true, value: a.step });
    for (const r of W.window_at_time_90_step_3.reject) expect(matchCode(SECRET, r.code, s(90), null).ok).toBe(false);
  });
  it('single use: the enrollment code starts the ledger, each later step only once', () => {
    const [first, ...rest] = W.single_use_sequence_last_used_step_initially_none;
    let state: TotpState = { phase: 'pending', secret: SECRET };
    const confirmed = transition(state, { kind: 'verify_enrollment', code: first!.code }, s(first!.time));
    expect(confirmed.ok).toBe(true);
    if (!confirmed.ok) return;
    state = confirmed.value.state;
    expect(confirmed.value.usedStep).toBe(first!.last_used_step_after);
    for (const row of rest) {
      const r = transition(state, { kind: 'sign_in', code: row.code }, s(row.time));
      expect(r.ok, `${row.time}: ${row.expect}`).toBe(row.expect.startsWith('accept'));
      if (r.ok) state = r.value.state;
      expect(state.phase === 'confirmed' && state.highestUsedStep).toBe(row.last_used_step_after);
    }
  });
  it('malformed inputs are refused without a match', () => {
    for (const v of W.malformed_inputs_strict_policy.values.filter((x): x is string => typeof x === 'string')) {
      expect(isWellFormedCode(v), JSON.stringify(v)).toBe(false);
      expect(matchCode(SECRET, v, s(59), null).ok).toBe(false);
    }
  });
});

describe('enrollment transitions', () => {
  const now = s(90);
  const code = W.codes_by_step['3']!;
  const none: TotpState = { phase: 'none' };
  const pending: TotpState = { phase: 'pending', secret: SECRET };
  const confirmed: TotpState = { phase: 'confirmed', secret: SECRET, highestUsedStep: 1 };
  it('enroll: None and Pending go to Pending with the new secret, Confirmed refuses', () => {
    const other = new Uint8Array(20).fill(1);
    expect(transition(none, { kind: 'enroll', secret: other }, now)).toEqual({
      ok: true,
      value: { state: { phase: 'pending', secret: other }, usedStep: null },
    });
    expect(transition(pending, { kind: 'enroll', secret: other }, now)).toEqual({
      ok: true,
      value: { state: { phase: 'pending', secret: other }, usedStep: null },
    });
    expect(transition(confirmed, { kind: 'enroll', secret: other }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.totp_already_enrolled',
    });
  });
  it('verify_enrollment only from Pending', () => {
    expect(transition(none, { kind: 'verify_enrollment', code }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.totp_not_enrolled',
    });
    expect(transition(confirmed, { kind: 'verify_enrollment', code }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.totp_already_enrolled',
    });
    expect(transition(pending, { kind: 'verify_enrollment', code: '000000' }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_code',
    });
    expect(transition(pending, { kind: 'verify_enrollment', code }, now)).toEqual({
      ok: true,
      value: { state: { phase: 'confirmed', secret: SECRET, highestUsedStep: 3 }, usedStep: 3 },
    });
  });
  it('disable needs Confirmed and a live code', () => {
    expect(transition(pending, { kind: 'disable', code }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.totp_not_enrolled',
    });
    expect(transition({ ...confirmed, highestUsedStep: 3 }, { kind: 'disable', code }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_code',
    });
    expect(transition(confirmed, { kind: 'disable', code }, now)).toEqual({
      ok: true,
      value: { state: { phase: 'none' }, usedStep: 3 },
    });
  });
  it('sign_in needs Confirmed', () => {
    expect(transition(pending, { kind: 'sign_in', code }, now)).toMatchObject({
      ok: false,
      code: 'error.auth.totp_not_enrolled',
    });
  });
});

describe('which events compare a code', () => {
  const none: TotpState = { phase: 'none' };
  const pending: TotpState = { phase: 'pending', secret: SECRET };
  const confirmed: TotpState = { phase: 'confirmed', secret: SECRET, highestUsedStep: 1 };
  it('verify_enrollment in Pending, disable and sign_in in Confirmed; enroll never, nor any refusal by phase', () => {
    const events = [
      { kind: 'enroll', secret: SECRET },
      { kind: 'verify_enrollment', code: '123456' },
      { kind: 'disable', code: '123456' },
      { kind: 'sign_in', code: '123456' },
    ] as const;
    const table = [none, pending, confirmed].map((state) => events.map((event) => comparesCode(state, event)));
    expect(table).toEqual([
      [false, false, false, false],
      [false, true, false, false],
      [false, false, true, true],
    ]);
  });
});

describe('refusals say why', () => {
  it('every refusal of the machine carries a detail for the problem document', () => {
    const now = s(90);
    const code = W.codes_by_step['3']!;
    const refusals = [
      transition({ phase: 'confirmed', secret: SECRET, highestUsedStep: 1 }, { kind: 'enroll', secret: SECRET }, now),
      transition({ phase: 'none' }, { kind: 'verify_enrollment', code }, now),
      transition({ phase: 'confirmed', secret: SECRET, highestUsedStep: 1 }, { kind: 'verify_enrollment', code }, now),
      transition({ phase: 'pending', secret: SECRET }, { kind: 'disable', code }, now),
      matchCode(SECRET, '000000', now, null),
      judgeChallenge(null, 0),
      judgeChallenge({ idHash: 'h', accountId: 'a', expiresAt: 1_000, attempts: 6 }, 0),
    ];
    for (const r of refusals) {
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.detail).toMatch(/\w{3,}/);
    }
  });
});

describe('codes from a secret held in a larger buffer', () => {
  it("use the secret's own bytes, not the whole buffer it is a view of", () => {
    const padded = new Uint8Array(SECRET.length + 8).fill(0xee);
    padded.set(SECRET, 4);
    const view = padded.subarray(4, 4 + SECRET.length);
    for (const step of [1, 3, 37_037_036]) expect(codeForStep(view, step)).toBe(codeForStep(SECRET, step));
  });
});

describe('challenge judgement', () => {
  const c = { idHash: 'h', accountId: 'a', expiresAt: 1000, attempts: 1 };
  it('unknown and expired are invalid; the sixth attempt is exhausted', () => {
    expect(judgeChallenge(null, 0)).toMatchObject({ code: 'error.auth.challenge_invalid' });
    expect(judgeChallenge(c, 1000)).toMatchObject({ code: 'error.auth.challenge_invalid' });
    expect(judgeChallenge({ ...c, attempts: 5 }, 999).ok).toBe(true);
    expect(judgeChallenge({ ...c, attempts: 6 }, 999)).toMatchObject({ code: 'error.auth.challenge_exhausted' });
  });
  it('a challenge was opened one lifetime before it expires', () => {
    expect(CHALLENGE_TTL_MS).toBe(5 * 60_000);
    expect(challengeOpenedAt({ expiresAt: 1_000_000 })).toBe(1_000_000 - 5 * 60_000);
  });
  it('attempts left count down from five and stop at zero', () => {
    expect([0, 1, 4, 5, 6, 9].map(attemptsLeft)).toEqual([5, 4, 1, 0, 0, 0]);
  });
});
