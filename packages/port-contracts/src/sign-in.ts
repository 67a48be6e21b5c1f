import { expect, it } from 'vitest';
import {
  claimPasswordCheck,
  droppedByIssuance,
  SOURCE_WINDOW_MS,
  ADDRESS_FREE_WRONG,
  TICKET_WRONG_PASSWORDS,
  type AccountRecord,
  type PasswordCheckClaim,
  type PasswordCheckFacts,
  type Ports,
  type SignInTicketRecord,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
let n = 0;

async function using(
  setup: Setup,
  count: number,
  body: (ports: Ports, accounts: AccountRecord[]) => Promise<void>,
): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    const made: AccountRecord[] = [];
    for (let i = 0; i < count; i++) {
      const a = testAccount('signin');
      await ports.accounts.createAccount(a);
      made.push(a);
    }
    await body(ports, made);
  } finally {
    await cleanup?.();
  }
}

const claimOf = (over: Partial<PasswordCheckClaim> = {}): PasswordCheckClaim => {
  n++;
  const addressKey = over.addressKey ?? `guessed${n}@example.org`;
  return {
    addressKey,
    legacyKey: addressKey,
    sourceKey: `4:10.0.0.${n % 250}`,
    ticketHash: null,
    at: T0,
    sourceLimit: 100,
    ...over,
  };
};

const ticketOf = (accountId: string, over: Partial<SignInTicketRecord> = {}): SignInTicketRecord => {
  n++;
  return {
    ticketHash: (n + 0x51).toString(16).padStart(64, '0'),
    accountId,
    issuedAt: T0,
    expiresAt: T0 + 86_400_000,
    credentialsAt: null,
    wrongPasswords: 0,
    ...over,
  };
};

export function describeSignInContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'sign-in', 'SignInThrottleStore', () => {
    it("claims password checks per address and per source by core's rule, and a refund gives the place back", () =>
      using(setup, 0, async ({ signIn: s }) => {
        const base = claimOf({ sourceLimit: 12 });
        expect(await s.findAddressGuesses(base.addressKey)).toBeNull();
        expect(await s.findSourceFailures(base.sourceKey)).toBeNull();
        let facts: PasswordCheckFacts = { address: null, source: null, ticket: null };
        for (let i = 0; i < ADDRESS_FREE_WRONG + 2; i++) {
          const claim = { ...base, at: T0 + i * 1000 };
          const expected = claimPasswordCheck(facts, claim);
          facts = {
            ...facts,
            address: expected.writes.address ?? facts.address,
            source: expected.writes.source ?? facts.source,
          };
          expect(await s.claimPasswordCheck(claim)).toEqual(expected.admission);
        }
        expect(await s.findAddressGuesses(base.addressKey)).toEqual(facts.address);
        expect(await s.findSourceFailures(base.sourceKey)).toEqual(facts.source);
        expect(facts.address).toEqual({
          wrongAt: Array.from({ length: ADDRESS_FREE_WRONG }, (_, i) => T0 + i * 1000),
          strikes: 2,
          lastStrikeAt: T0 + 11_000,
        });
        // Refused again: the third strike, four minutes, and only the strike is written.
        expect(await s.claimPasswordCheck({ ...base, at: T0 + 12_000 })).toEqual({
          admitted: false,
          retryAfterS: 240,
          heldBy: 'address',
        });
        expect(await s.findAddressGuesses(base.addressKey)).toEqual({
          ...facts.address,
          strikes: 3,
          lastStrikeAt: T0 + 12_000,
        });
        expect(await s.findSourceFailures(base.sourceKey)).toEqual(facts.source);
        // A refund removes the claim's time from both.
        await s.refundPasswordCheck({ ...base, at: T0 + 9000 }, 'address');
        expect((await s.findAddressGuesses(base.addressKey))!.wrongAt).not.toContain(T0 + 9000);
        expect((await s.findSourceFailures(base.sourceKey))!.failedAt).not.toContain(T0 + 9000);
        // The source alone: three more addresses from it fill its limit of 12 (nine are left after
        // the refund), then it is held for any address until its oldest failure leaves the hour.
        for (const at of [20_000, 21_000, 22_000]) {
          expect(
            await s.claimPasswordCheck({ ...claimOf(), sourceKey: base.sourceKey, sourceLimit: 12, at: T0 + at }),
          ).toEqual({ admitted: true, by: 'address' });
        }
        const refused = claimOf({ sourceKey: base.sourceKey, sourceLimit: 12, at: T0 + 23_000 });
        expect(await s.claimPasswordCheck(refused)).toEqual({
          admitted: false,
          retryAfterS: (SOURCE_WINDOW_MS - 23_000) / 1000,
          heldBy: 'source',
        });
        // A refusal by the source leaves nothing behind for the address it named (a flood of
        // made-up addresses must not fill the store).
        expect(await s.findAddressGuesses(refused.addressKey)).toBeNull();
      }));

    it('a ticket that holds for the address is judged by its own count; five wrong passwords void it', () =>
      using(setup, 2, async ({ signIn: s }, [a, b]) => {
        const ticket = ticketOf(a!.id);
        await s.issueSignInTicket(ticket);
        expect(await s.findSignInTicket(ticket.ticketHash)).toEqual(ticket);
        const claim = claimOf({ addressKey: a!.addressKey!, legacyKey: a!.addressKey!, ticketHash: ticket.ticketHash });
        for (let i = 0; i < TICKET_WRONG_PASSWORDS; i++)
          expect(await s.claimPasswordCheck(claim)).toEqual({ admitted: true, by: 'ticket' });
        expect((await s.findSignInTicket(ticket.ticketHash))!.wrongPasswords).toBe(TICKET_WRONG_PASSWORDS);
        // Nothing counted on the address or the source while the ticket judged.
        expect((await s.findAddressGuesses(claim.addressKey))?.wrongAt ?? []).toEqual([]);
        expect((await s.findSourceFailures(claim.sourceKey))?.failedAt ?? []).toEqual([]);
        // Void now: the claim falls to the address count.
        expect(await s.claimPasswordCheck(claim)).toEqual({ admitted: true, by: 'address' });
        await s.refundPasswordCheck(claim, 'ticket');
        expect((await s.findSignInTicket(ticket.ticketHash))!.wrongPasswords).toBe(TICKET_WRONG_PASSWORDS - 1);
        // Another account's ticket does not hold for this address.
        const other = ticketOf(b!.id);
        await s.issueSignInTicket(other);
        expect(await s.claimPasswordCheck({ ...claim, ticketHash: other.ticketHash })).toEqual({
          admitted: true,
          by: 'address',
        });
        expect((await s.findSignInTicket(other.ticketHash))!.wrongPasswords).toBe(0);
      }));

    it("issuing a ticket drops exactly the tickets core's SIGN_IN_TICKETS_DROPPED takes: the account's lapsed ones", () =>
      using(setup, 2, async (ports, [a, b]) => {
        const s = ports.signIn;
        const now = T0 + 10_000;
        const stored = [
          ticketOf(a!.id, { expiresAt: now - 1 }),
          ticketOf(a!.id, { expiresAt: now }),
          ticketOf(a!.id, { expiresAt: now + 1 }),
          ticketOf(b!.id, { expiresAt: now - 1 }),
        ];
        for (const t of stored) await s.issueSignInTicket(t);
        const issued = ticketOf(a!.id, { issuedAt: now, expiresAt: now + 86_400_000 });
        await s.issueSignInTicket(issued);
        // The expectation is core's filter, pinned: the account's tickets at or past expiry, no other account's.
        const dropped = stored.filter((t) => droppedByIssuance(t, issued));
        expect(dropped).toEqual([stored[0], stored[1]]);
        for (const t of stored) expect(await s.findSignInTicket(t.ticketHash)).toEqual(dropped.includes(t) ? null : t);
        expect(await s.findSignInTicket(issued.ticketHash)).toEqual(issued);
      }));

    it("a ticket ends when its account's credentials change, and on void", () =>
      using(setup, 1, async ({ signIn: s, accounts }, [a]) => {
        const ticket = ticketOf(a!.id);
        await s.issueSignInTicket(ticket);
        const claim = claimOf({ addressKey: a!.addressKey!, legacyKey: a!.addressKey!, ticketHash: ticket.ticketHash });
        expect(await s.claimPasswordCheck(claim)).toEqual({ admitted: true, by: 'ticket' });
        await accounts.setLocked(a!.id, T0);
        await accounts.setLocked(a!.id, null);
        expect(await s.claimPasswordCheck(claim)).toEqual({ admitted: true, by: 'address' });
        const fresh = ticketOf(a!.id, { credentialsAt: T0 });
        const expired = ticketOf(a!.id, { credentialsAt: T0, expiresAt: T0 });
        await s.issueSignInTicket(expired);
        await s.issueSignInTicket(fresh);
        // Issuing drops the account's expired tickets; an expired one never holds.
        expect(await s.findSignInTicket(expired.ticketHash)).toBeNull();
        expect(await s.claimPasswordCheck({ ...claim, ticketHash: fresh.ticketHash })).toEqual({
          admitted: true,
          by: 'ticket',
        });
        expect(await s.voidSignInTickets(a!.id)).toBe(2);
        expect(await s.findSignInTicket(fresh.ticketHash)).toBeNull();
        await s.issueSignInTicket(ticketOf(a!.id));
        expect(await s.voidAllSignInTickets()).toBe(1);
      }));

    it('admits no more than the bound of many concurrent claims, per address and per ticket (an atomic read-decide-write)', () =>
      using(setup, 1, async ({ signIn: s }, [a]) => {
        const claim = claimOf();
        const claims = await Promise.all(
          Array.from({ length: 30 }, (_, i) => s.claimPasswordCheck({ ...claim, at: T0 + (i % 3) })),
        );
        expect(claims.filter((c) => c.admitted)).toHaveLength(ADDRESS_FREE_WRONG);
        expect((await s.findAddressGuesses(claim.addressKey))!.wrongAt).toHaveLength(ADDRESS_FREE_WRONG);
        const ticket = ticketOf(a!.id);
        await s.issueSignInTicket(ticket);
        const withTicket = claimOf({
          addressKey: a!.addressKey!,
          legacyKey: a!.addressKey!,
          ticketHash: ticket.ticketHash,
        });
        const byTicket = await Promise.all(Array.from({ length: 20 }, () => s.claimPasswordCheck(withTicket)));
        expect(byTicket.filter((c) => c.admitted && c.by === 'ticket')).toHaveLength(TICKET_WRONG_PASSWORDS);
      }));
  });
}
