import { describe, expect, it } from 'vitest';
import {
  ADDRESS_FREE_WRONG,
  addressHeld,
  claimPasswordCheck,
  recordSourceFailure,
  recordStrike,
  recordWrongPassword,
  refundPasswordCheck,
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

describe('per source', () => {
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
});
