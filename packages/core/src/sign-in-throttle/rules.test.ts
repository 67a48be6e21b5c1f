import { describe, expect, it } from 'vitest';
import {
  ADDRESS_FREE_WRONG,
  addressHeld,
  claimPasswordCheck,
  recordSourceFailure,
  recordStrike,
  recordWrongPassword,
  refundPasswordCheck,
  sessionCountKey,
  sourceDecision,
  strikeDelayMs,
  ticketHolds,
  TICKET_WRONG_PASSWORDS,
  type PasswordCheckClaim,
  type PasswordCheckFacts,
  type SignInTicketRecord,
} from './rules.js';

const T0 = Date.parse('2026-12-07T10:00:00.000Z');
const HOUR = 3_600_000;
const claim = (over: Partial<PasswordCheckClaim> = {}): PasswordCheckClaim => ({
  addressKey: 'ada@example.org',
  legacyKey: 'ada@example.org',
  sourceKey: '4:192.0.2.1',
  ticketHash: null,
  at: T0,
  sourceLimit: 100,
  ...over,
});
const none: PasswordCheckFacts = { address: null, source: null, ticket: null };
const ticket = (over: Partial<SignInTicketRecord> = {}): SignInTicketRecord => ({
  ticketHash: 'h',
  accountId: 'a',
  issuedAt: T0 - 1000,
  expiresAt: T0 + HOUR,
  credentialsAt: null,
  wrongPasswords: 0,
  ...over,
});
const holder = { addressKey: 'ada@example.org', credentialsChangedAt: null, lockedAt: null };

describe('per address', () => {
  it('lets ten wrong passwords in an hour through, refuses the eleventh, and has room again when the oldest leaves the hour', () => {
    let s = null as ReturnType<typeof recordWrongPassword> | null;
    for (let i = 0; i < ADDRESS_FREE_WRONG; i++) {
      expect(addressHeld(s, T0 + i)).toBe(false);
      s = recordWrongPassword(s, T0 + i);
    }
    expect(addressHeld(s, T0 + 10)).toBe(true);
    expect(addressHeld(s, T0 + HOUR - 1)).toBe(true);
    expect(addressHeld(s, T0 + HOUR)).toBe(false);
    // Only the last ten are kept: older ones cannot change a decision.
    s = recordWrongPassword(s, T0 + HOUR);
    expect(s.wrongAt).toHaveLength(ADDRESS_FREE_WRONG);
    expect(s.wrongAt[0]).toBe(T0 + 1);
  });

  it('each strike answers a minute doubling per further strike, at most an hour, and holds that long after it', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => strikeDelayMs(n) / 1000)).toEqual([
      60, 120, 240, 480, 960, 1920, 3600, 3600,
    ]);
    const struck = recordStrike({ wrongAt: [], strikes: 2, lastStrikeAt: T0 - 5000 }, T0);
    expect(struck).toEqual({ state: { wrongAt: [], strikes: 3, lastStrikeAt: T0 }, retryAfterS: 240 });
    // Even with nothing in the hour, the strike holds for its delay.
    expect(addressHeld(struck.state, T0 + 240_000 - 1)).toBe(true);
    expect(addressHeld(struck.state, T0 + 240_000)).toBe(false);
    // An attempt let through ends the strikes.
    expect(recordWrongPassword(struck.state, T0 + 240_000)).toEqual({
      wrongAt: [T0 + 240_000],
      strikes: 0,
      lastStrikeAt: null,
    });
  });
});

describe('per address, stored records', () => {
  it('drops stored wrong passwords outside the hour and reads the rest oldest first, whatever order they were stored in', () => {
    const stored = { wrongAt: [T0 - HOUR, T0 + 3, T0 + 1, T0 - HOUR - 5, T0 + 2], strikes: 0, lastStrikeAt: null };
    expect(recordWrongPassword(stored, T0 + 4).wrongAt).toEqual([T0 + 1, T0 + 2, T0 + 3, T0 + 4]);
    expect(recordStrike(stored, T0 + 4).state.wrongAt).toEqual([T0 + 1, T0 + 2, T0 + 3]);
  });

  it('keeps only the latest ten wrong passwords even when more than ten lie in the hour', () => {
    const stored = { wrongAt: Array.from({ length: 12 }, (_, i) => T0 + i), strikes: 0, lastStrikeAt: null };
    const after = recordWrongPassword(stored, T0 + 20);
    expect(after.wrongAt).toEqual([T0 + 3, T0 + 4, T0 + 5, T0 + 6, T0 + 7, T0 + 8, T0 + 9, T0 + 10, T0 + 11, T0 + 20]);
  });

  it('the first strike on an address with no record answers a minute', () => {
    expect(recordStrike(null, T0)).toEqual({ state: { wrongAt: [], strikes: 1, lastStrikeAt: T0 }, retryAfterS: 60 });
  });

  it('a record with no strikes holds nothing by strike time, whatever strike time it carries', () => {
    expect(addressHeld({ wrongAt: [], strikes: 0, lastStrikeAt: T0 }, T0 + 1)).toBe(false);
  });
});

describe('per source', () => {
  it('drops stored failures outside the hour and reads the rest oldest first, whatever order they were stored in', () => {
    const stored = { failedAt: [T0 + 3, T0 - HOUR, T0 + 1, T0 + 2] };
    expect(recordSourceFailure(stored, T0 + 4, 100).failedAt).toEqual([T0 + 1, T0 + 2, T0 + 3, T0 + 4]);
    // Held until the oldest failure that keeps the count at the limit, T0 + 2 s, leaves the hour.
    expect(sourceDecision({ failedAt: [T0 + 3_000, T0 + 1_000, T0 + 2_000] }, T0 + 3_000, 2)).toEqual({
      held: true,
      retryAfterS: 3599,
    });
  });

  it('refuses at the limit until the oldest failure that keeps it there leaves the hour', () => {
    let s = null as ReturnType<typeof recordSourceFailure> | null;
    for (let i = 0; i < 3; i++) s = recordSourceFailure(s, T0 + i * 1000, 3);
    expect(sourceDecision(s, T0 + 2000, 4)).toEqual({ held: false });
    expect(sourceDecision(s, T0 + 2000, 3)).toEqual({ held: true, retryAfterS: 3598 });
    expect(sourceDecision(s, T0 + HOUR, 3)).toEqual({ held: false });
    // At most `limit` failures are kept.
    expect(recordSourceFailure(s, T0 + HOUR, 2).failedAt).toEqual([T0 + 2000, T0 + HOUR]);
  });
});

describe('tickets', () => {
  it("hold only for their account's address (or its legacy key), unexpired, under five wrong passwords, with the credentials unchanged and unlocked", () => {
    const t = { record: ticket(), account: holder };
    expect(ticketHolds(t, claim())).toBe(true);
    expect(ticketHolds(t, claim({ addressKey: 'ADA@example.org', legacyKey: 'ada@example.org' }))).toBe(true);
    expect(ticketHolds(t, claim({ addressKey: 'ada@example.org', legacyKey: 'old:ada' }))).toBe(true);
    expect(ticketHolds(t, claim({ addressKey: 'bob@example.org', legacyKey: 'bob@example.org' }))).toBe(false);
    expect(ticketHolds({ ...t, record: ticket({ expiresAt: T0 }) }, claim())).toBe(false);
    expect(ticketHolds({ ...t, record: ticket({ wrongPasswords: TICKET_WRONG_PASSWORDS - 1 }) }, claim())).toBe(true);
    expect(ticketHolds({ ...t, record: ticket({ wrongPasswords: TICKET_WRONG_PASSWORDS }) }, claim())).toBe(false);
    expect(ticketHolds({ ...t, account: { ...holder, credentialsChangedAt: T0 - 10 } }, claim())).toBe(false);
    expect(
      ticketHolds(
        { record: ticket({ credentialsAt: T0 - 10 }), account: { ...holder, credentialsChangedAt: T0 - 10 } },
        claim(),
      ),
    ).toBe(true);
    expect(ticketHolds({ ...t, account: { ...holder, lockedAt: T0 - 10 } }, claim())).toBe(false);
    expect(ticketHolds({ ...t, account: { ...holder, addressKey: null } }, claim())).toBe(false);
    expect(ticketHolds({ ...t, account: null }, claim())).toBe(false);
    expect(ticketHolds(null, claim())).toBe(false);
  });
});

describe('claimPasswordCheck and refundPasswordCheck', () => {
  it('a holding ticket judges alone: admitted even while the address and the source are held, counted on the ticket only', () => {
    let address = null as ReturnType<typeof recordWrongPassword> | null;
    for (let i = 0; i < 10; i++) address = recordWrongPassword(address, T0);
    const source = { failedAt: [T0] };
    const facts: PasswordCheckFacts = {
      address,
      source,
      ticket: { record: ticket({ wrongPasswords: 2 }), account: holder },
    };
    const c = claim({ ticketHash: 'h', sourceLimit: 1 });
    expect(claimPasswordCheck(facts, c)).toEqual({
      admission: { admitted: true, by: 'ticket' },
      writes: { ticketWrongPasswords: 3 },
    });
    expect(refundPasswordCheck(facts, c, 'ticket')).toEqual({ ticketWrongPasswords: 1 });
    // Without the ticket, the address refuses first (a strike), then the source (nothing written).
    expect(claimPasswordCheck({ ...facts, ticket: null }, c)).toEqual({
      admission: { admitted: false, retryAfterS: 60, heldBy: 'address' },
      writes: { address: { wrongAt: address!.wrongAt, strikes: 1, lastStrikeAt: T0 } },
    });
    expect(claimPasswordCheck({ address: null, source, ticket: null }, c)).toEqual({
      admission: { admitted: false, retryAfterS: 3600, heldBy: 'source' },
      writes: {},
    });
  });

  it('admitted by the address, the check counts on the address and the source; the refund takes exactly that back', () => {
    const c = claim({ at: T0 + 5 });
    const first = claimPasswordCheck(none, c);
    expect(first).toEqual({
      admission: { admitted: true, by: 'address' },
      writes: { address: { wrongAt: [T0 + 5], strikes: 0, lastStrikeAt: null }, source: { failedAt: [T0 + 5] } },
    });
    const after: PasswordCheckFacts = { address: first.writes.address!, source: first.writes.source!, ticket: null };
    expect(refundPasswordCheck(after, c, 'address')).toEqual({
      address: { wrongAt: [], strikes: 0, lastStrikeAt: null },
      source: { failedAt: [] },
    });
  });

  it('a refund gives back only a place the claim took: with none at its time, or no record, nothing else changes', () => {
    const facts: PasswordCheckFacts = {
      address: { wrongAt: [T0 + 1, T0 + 2], strikes: 0, lastStrikeAt: null },
      source: { failedAt: [T0 + 1, T0 + 2] },
      ticket: null,
    };
    expect(refundPasswordCheck(facts, claim({ at: T0 + 5 }), 'address')).toEqual({
      address: { wrongAt: [T0 + 1, T0 + 2], strikes: 0, lastStrikeAt: null },
      source: { failedAt: [T0 + 1, T0 + 2] },
    });
    expect(refundPasswordCheck({ ...facts, address: null }, claim({ at: T0 + 2 }), 'address')).toEqual({
      source: { failedAt: [T0 + 1] },
    });
    expect(refundPasswordCheck({ ...facts, source: null }, claim({ at: T0 + 2 }), 'address')).toEqual({
      address: { wrongAt: [T0 + 1], strikes: 0, lastStrikeAt: null },
    });
    // A ticket that is gone by the refund has nothing to give back.
    expect(refundPasswordCheck(none, claim(), 'ticket')).toEqual({});
  });
});

describe('sessionCountKey', () => {
  it("counts a session's own checks under its id, in a key no address key can equal", () => {
    expect(sessionCountKey('s1')).toBe('session:s1');
    expect(sessionCountKey('s1')).not.toContain('@');
  });
});
