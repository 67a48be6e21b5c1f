import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../ports/session-ledger.js';
import {
  DEFAULT_SESSION_POLICY,
  decideAccess,
  decideIssuance,
  needsTouch,
  type SessionPolicy,
  sessionExpiresAt,
  sessionStatus,
} from './machine.js';

const policy: SessionPolicy = { idleMs: 100, maxMs: 1_000, touchIntervalMs: 10, reauthWindowMs: 50 };
const session = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  id: 's1',
  accountId: 'a',
  tokenHash: 'h',
  cohortHash: null,
  createdAt: 0,
  refreshedAt: 500,
  lastUsedAt: 500,
  accessFloor: 200,
  closedAt: null,
  authenticatedAt: 0,
  ...over,
});

describe('session lifecycle', () => {
  it('the defaults: 180 days idle, 365 days at most, last-used written once a minute', () => {
    const DAY = 86_400_000;
    expect(DEFAULT_SESSION_POLICY).toMatchObject({ idleMs: 180 * DAY, maxMs: 365 * DAY, touchIntervalMs: 60_000 });
  });

  it('open until the idle or the hard expiry, whichever comes first; closed wins over both', () => {
    const s = session();
    expect(sessionStatus(s, 599, policy)).toBe('open');
    expect(sessionStatus(s, 600, policy)).toBe('idle_expired');
    const busy = session({ refreshedAt: 950 });
    expect(sessionStatus(busy, 999, policy)).toBe('open');
    expect(sessionStatus(busy, 1_000, policy)).toBe('hard_expired');
    expect(sessionStatus(session({ closedAt: 550 }), 550, policy)).toBe('closed');
    expect(sessionExpiresAt(s, policy)).toBe(600);
    expect(sessionExpiresAt(busy, policy)).toBe(1_000);
  });

  it('issuance: only an open session may mint a token; unknown, closed and expired look the same', () => {
    const s = session();
    expect(decideIssuance(s, 599, policy)).toEqual({ ok: true, value: s });
    for (const refused of [decideIssuance(null, 0, policy), decideIssuance(s, 600, policy)]) {
      expect(refused).toMatchObject({ ok: false, code: 'error.auth.session_invalid' });
    }
    expect(decideIssuance(session({ closedAt: 1 }), 2, policy)).toMatchObject({ ok: false });
  });

  it('access: refused once the session is closed, for another account, or for a token older than the floor', () => {
    const s = session();
    const token = { accountId: 'a', issuedAt: 200 };
    expect(decideAccess(s, token)).toEqual({ ok: true, value: s });
    // Expiry is judged at issuance only: a token outlives its session's expiry.
    expect(decideAccess(session({ refreshedAt: 0, createdAt: -10_000 }), token).ok).toBe(true);
    const refused = { ok: false, code: 'error.auth.session_invalid' };
    expect(decideAccess(null, token)).toMatchObject(refused);
    expect(decideAccess(session({ closedAt: 300 }), token)).toMatchObject(refused);
    expect(decideAccess(session({ closedAt: 0 }), token)).toMatchObject(refused);
    expect(decideAccess(s, { accountId: 'b', issuedAt: 200 })).toMatchObject(refused);
    expect(decideAccess(s, { accountId: 'a', issuedAt: 199 })).toMatchObject(refused);
    // The problem document says why, for issuance and access alike.
    for (const r of [decideAccess(null, token), decideIssuance(null, 0, policy)]) {
      if (!r.ok) expect(r.detail).toMatch(/session/);
    }
  });

  it('last-used is written again once the touch interval has passed, not before', () => {
    const s = session({ lastUsedAt: 500 });
    expect(needsTouch(s, 509, policy)).toBe(false);
    expect(needsTouch(s, 510, policy)).toBe(true);
  });
});
