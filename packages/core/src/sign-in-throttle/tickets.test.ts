import { describe, expect, it } from 'vitest';
import {
  createCoreServices,
  createMemoryPorts,
  FakeClock,
  MemoryLogger,
  PlainHasher,
  SeededRandom,
} from '../testing/index.js';
import { signInTicketHash } from './ticket.js';

const PASSWORD = 'the right password';

async function setup() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const core = await createCoreServices({
    store: ports.accounts,
    signIn: ports.signIn,
    clock,
    random: new SeededRandom(3),
    hasher: new PlainHasher(),
    logger: new MemoryLogger(),
  });
  const register = async (address: string) => {
    const r = await core.accounts.register({ address, password: PASSWORD });
    if (!r.ok || r.value.signInTicket === undefined) throw new Error('register');
    return r.value.signInTicket;
  };
  return { ports, clock, core, register };
}

describe('sign-in tickets through the services', () => {
  it('are stored hashed, bound to the account, valid as long as a session may live', async () => {
    const { ports, clock, core, register } = await setup();
    const ticket = await register('ada@example.org');
    const stored = await ports.signIn.findSignInTicket(signInTicketHash(ticket)!);
    expect(stored).toMatchObject({
      issuedAt: clock.now(),
      expiresAt: clock.now() + core.sessions.policy.maxMs,
      wrongPasswords: 0,
      credentialsAt: null,
    });
    expect(JSON.stringify(stored)).not.toContain(ticket);
  });

  it("voidTickets ends one account's tickets, voidAllTickets every account's", async () => {
    const { ports, core, register } = await setup();
    const ada = await register('ada@example.org');
    const bob = await register('bob@example.org');
    const ada2 = (await core.accounts.login({ address: 'ada@example.org', password: PASSWORD, cohortHash: null })) as {
      ok: true;
      value: { kind: 'session'; pair: { signInTicket: string } };
    };
    const adaId = (await ports.signIn.findSignInTicket(signInTicketHash(ada)!))!.accountId;
    await core.sessions.voidTickets(adaId);
    expect(await ports.signIn.findSignInTicket(signInTicketHash(ada)!)).toBeNull();
    expect(await ports.signIn.findSignInTicket(signInTicketHash(ada2.value.pair.signInTicket)!)).toBeNull();
    expect(await ports.signIn.findSignInTicket(signInTicketHash(bob)!)).not.toBeNull();
    await core.sessions.voidAllTickets();
    expect(await ports.signIn.findSignInTicket(signInTicketHash(bob)!)).toBeNull();
  });
});
