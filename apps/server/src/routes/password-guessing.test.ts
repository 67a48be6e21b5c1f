import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, MemoryBlobStore, MemoryLogger, PlainHasher, SeededRandom } from '@strongroom/core/testing';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createApp } from '../app.js';
import { readConfig } from '../config.js';
import { buildDeps } from '../deps.js';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { PASSWORD, VERSION, call, registerUser, testServer, type Reply, type TestServer } from '@strongroom/tests';

let s: TestServer;
afterEach(async () => {
  await s?.close();
});

/** Argon2id that counts its checks, to see that a throttled login hashes nothing. */
class CountingHasher extends Argon2Hasher {
  checks = 0;
  override async verify(hash: string, password: string): Promise<boolean> {
    this.checks++;
    return super.verify(hash, password);
  }
}

const WRONG = 'not the password at all';

/** A login through the real server from a chosen loopback client address (127.0.0.2 and up are distinct peers). */
function loginFrom(from: string, body: Record<string, unknown>): Promise<Reply> {
  const url = new URL(`${s.baseUrl}/v1/auth/login`);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-svc-protocol': VERSION,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null, headers });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const login = (address: string, password: string, ticket?: string) =>
  call(s.app, 'POST', '/v1/auth/login', {
    body: { address, password, ...(ticket !== undefined ? { sign_in_ticket: ticket } : {}) },
  });

describe('password guessing, per address', () => {
  it('25 wrong passwords then the right one: the 11th on are 429 without hashing (Retry-After 60 s doubling to an hour), the right one too, and with a ticket 200', async () => {
    const hasher = new CountingHasher();
    s = await testServer({}, { hasher });
    const user = await registerUser(s.app);
    const ticket = (user as unknown as { sign_in_ticket: string }).sign_in_ticket;
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const statuses: number[] = [];
    const checksBefore = hasher.checks;
    for (let i = 0; i < 25; i++) {
      const r = await login(user.address, WRONG);
      statuses.push(r.status);
      if (i >= 10) {
        expect(r.body.code).toBe('error.auth.throttled');
        expect(r.headers.get('retry-after')).toBe(String(Math.min(60 * 2 ** (i - 10), 3600)));
      }
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(15).fill(429)]);
    // Only the ten admitted checks ran the hasher.
    expect(hasher.checks - checksBefore).toBe(10);
    const right = await login(user.address, PASSWORD);
    expect(right.status).toBe(429);
    expect(right.body.code).toBe('error.auth.throttled');
    expect(right.headers.get('retry-after')).toBe('3600');
    const owner = await login(user.address, PASSWORD, ticket);
    expect(owner.status).toBe(200);
    expect(owner.body.sign_in_ticket).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(owner.body.sign_in_ticket).not.toBe(ticket);
    // Stored only as its SHA-256, and never logged.
    const hashes = (s.db.prepare('SELECT ticket_hash FROM sign_in_tickets').all() as { ticket_hash: string }[]).map(
      (r) => r.ticket_hash,
    );
    expect(hashes).toContain(createHash('sha256').update(Buffer.from(ticket, 'base64url')).digest('hex'));
    expect(JSON.stringify(s.db.prepare('SELECT * FROM sign_in_tickets').all())).not.toContain(ticket);
    expect(JSON.stringify(s.logger.lines)).not.toContain(ticket);
    expect(JSON.stringify(s.logger.lines)).not.toContain(owner.body.sign_in_ticket);
  }, 60_000);

  it('holds an unknown address the same way, and the normalized spelling shares the count', async () => {
    const hasher = new CountingHasher();
    s = await testServer({}, { hasher });
    for (let i = 0; i < 10; i++)
      expect((await login(i % 2 === 0 ? 'nobody@example.org' : '  NoBody@Example.ORG ', WRONG)).status).toBe(401);
    const checks = hasher.checks;
    const held = await login('nobody@example.org', WRONG);
    expect(held.status).toBe(429);
    expect(held.headers.get('retry-after')).toBe('60');
    expect(hasher.checks).toBe(checks);
    // The count is kept under a hash: the database holds no list of the addresses people tried.
    const keys = (s.db.prepare('SELECT key FROM sign_in_counts').all() as { key: string }[]).map((r) => r.key);
    expect(keys.some((k) => k.startsWith('a:'))).toBe(true);
    expect(keys.filter((k) => k.toLowerCase().includes('nobody'))).toEqual([]);
  }, 60_000);

  it('a client that waits out each Retry-After is refused until the hour has room: 60, 120, ... s, then signs in', async () => {
    s = await testServer();
    const user = await registerUser(s.app);
    for (let i = 0; i < 10; i++) expect((await login(user.address, WRONG)).status).toBe(401);
    for (const expected of [60, 120, 240, 480, 960, 1920]) {
      const held = await login(user.address, PASSWORD);
      expect(held.status).toBe(429);
      expect(held.headers.get('retry-after')).toBe(String(expected));
      s.clock.advance(expected * 1000);
    }
    // 63 minutes on: the ten wrong passwords have left the hour and the last strike's delay is over.
    expect((await login(user.address, PASSWORD)).status).toBe(200);
  }, 60_000);

  it('a strike holds the address for its delay even once the hour has room; the next attempt let through ends the strikes', async () => {
    s = await testServer();
    const user = await registerUser(s.app);
    for (let i = 0; i < 10; i++) await login(user.address, WRONG);
    s.clock.advance(3_599_000);
    // One second before the first wrong password leaves the hour: refused, for a minute.
    expect((await login(user.address, WRONG)).headers.get('retry-after')).toBe('60');
    s.clock.advance(30_000);
    expect((await login(user.address, WRONG)).headers.get('retry-after')).toBe('120');
    s.clock.advance(120_000);
    expect((await login(user.address, WRONG)).status).toBe(401);
    expect((await login(user.address, PASSWORD)).status).toBe(200);
  }, 60_000);

  it('a ticket is judged by its own count: five wrong passwords with it void it, then it counts as absent', async () => {
    s = await testServer();
    const user = await registerUser(s.app);
    const ticket = (user as unknown as { sign_in_ticket: string }).sign_in_ticket;
    for (let i = 0; i < 11; i++) await login(user.address, WRONG);
    expect((await login(user.address, PASSWORD)).status).toBe(429);
    for (let i = 0; i < 5; i++) expect((await login(user.address, WRONG, ticket)).status).toBe(401);
    const voided = await login(user.address, PASSWORD, ticket);
    expect(voided.status).toBe(429);
    expect(voided.body.code).toBe('error.auth.throttled');
  }, 60_000);

  it('a right password with a ticket costs it nothing and hands out a fresh ticket with its own count of five', async () => {
    s = await testServer();
    const user = await registerUser(s.app);
    const first = (user as unknown as { sign_in_ticket: string }).sign_in_ticket;
    for (let i = 0; i < 11; i++) await login(user.address, WRONG);
    for (let i = 0; i < 4; i++) expect((await login(user.address, WRONG, first)).status).toBe(401);
    const signedIn = await login(user.address, PASSWORD, first);
    expect(signedIn.status).toBe(200);
    const fresh = signedIn.body.sign_in_ticket as string;
    // The first ticket kept its four: one more wrong password is its fifth, and voids it.
    expect((await login(user.address, WRONG, first)).status).toBe(401);
    expect((await login(user.address, PASSWORD, first)).status).toBe(429);
    for (let i = 0; i < 4; i++) expect((await login(user.address, WRONG, fresh)).status).toBe(401);
    expect((await login(user.address, PASSWORD, fresh)).status).toBe(200);
  }, 60_000);

  it("a ticket is for its own account's address, and ends with a password change, revoke-all and lock", async () => {
    s = await testServer();
    const alice = await registerUser(s.app);
    const bob = await registerUser(s.app);
    const aliceTicket = (alice as unknown as { sign_in_ticket: string }).sign_in_ticket;
    const bobTicket = (bob as unknown as { sign_in_ticket: string }).sign_in_ticket;
    for (let i = 0; i < 11; i++) await login(alice.address, WRONG);
    // Bob's ticket does not open Alice's address; a made-up or malformed one neither.
    expect((await login(alice.address, PASSWORD, bobTicket)).status).toBe(429);
    expect((await login(alice.address, PASSWORD, 'A'.repeat(32))).status).toBe(429);
    expect((await login(alice.address, PASSWORD, 'not a ticket')).status).toBe(429);
    // A password change ends Alice's earlier ticket.
    const NEW = 'a brand new passphrase here';
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/password', {
          token: alice.access_token,
          body: { current_password: PASSWORD, new_password: NEW },
        })
      ).status,
    ).toBe(200);
    expect((await login(alice.address, NEW, aliceTicket)).status).toBe(429);
    // An operator lock ends Bob's (and an unlock does not bring it back).
    const bobId = (await call(s.app, 'GET', '/v1/auth/profile', { token: bob.access_token })).body.account_id as string;
    for (let i = 0; i < 11; i++) await login(bob.address, WRONG);
    await s.deps.stores.accounts.setLocked(bobId, s.clock.now());
    await s.deps.stores.accounts.setLocked(bobId, null);
    expect((await login(bob.address, PASSWORD, bobTicket)).status).toBe(429);
  }, 60_000);

  it('every sign-in hands out a ticket that works: login 200 as well as register', async () => {
    s = await testServer();
    const user = await registerUser(s.app);
    const second = await login(user.address, PASSWORD);
    expect(second.status).toBe(200);
    expect(second.body.sign_in_ticket).toMatch(/^[A-Za-z0-9_-]{32}$/);
    for (let i = 0; i < 11; i++) await login(user.address, WRONG);
    expect((await login(user.address, PASSWORD, second.body.sign_in_ticket)).status).toBe(200);
  }, 60_000);
});

describe('password guessing with a stolen access token', () => {
  it("reauthenticate and password change are bounded per session: the 11th wrong guess is 429 and hashes nothing; strangers' guesses never stop the owner's own session", async () => {
    s = await testServer();
    const victim = await registerUser(s.app);
    const owner = await login(victim.address, PASSWORD);
    const stolen = victim.access_token;
    for (let i = 0; i < 5; i++)
      expect(
        (await call(s.app, 'POST', '/v1/auth/reauthenticate', { token: stolen, body: { password: `${WRONG} ${i}` } }))
          .status,
      ).toBe(403);
    for (let i = 0; i < 5; i++) {
      const changed = await call(s.app, 'POST', '/v1/auth/password', {
        token: stolen,
        body: { current_password: `${WRONG} ${i}`, new_password: `${WRONG} and longer` },
      });
      expect(changed.status).toBe(403);
    }
    const eleventh = await call(s.app, 'POST', '/v1/auth/reauthenticate', {
      token: stolen,
      body: { password: PASSWORD },
    });
    expect(eleventh).toMatchObject({ status: 429, body: { code: 'error.auth.throttled' } });
    expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/password', {
          token: stolen,
          body: { current_password: PASSWORD, new_password: `${PASSWORD}-new` },
        })
      ).status,
    ).toBe(429);
    // The address is not held by them, and strangers holding the address do not stop the owner's session.
    for (let i = 0; i < 11; i++) await login(victim.address, WRONG);
    expect((await login(victim.address, PASSWORD)).status).toBe(429);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/reauthenticate', {
          token: owner.body.access_token,
          body: { password: PASSWORD },
        })
      ).status,
    ).toBe(200);
    const changed = await call(s.app, 'POST', '/v1/auth/password', {
      token: owner.body.access_token,
      body: { current_password: PASSWORD, new_password: `${PASSWORD}-new` },
    });
    expect(changed.status).toBe(200);
    // The owner's change closed the stolen session.
    expect(
      (await call(s.app, 'POST', '/v1/auth/reauthenticate', { token: stolen, body: { password: `${PASSWORD}-new` } }))
        .status,
    ).toBe(401);
  }, 60_000);
});

describe('password guessing, per client address', () => {
  it('more failed sign-ins than the limit from one client address, over any accounts, are 429 until the hour has room; other addresses and ticket holders go on', async () => {
    s = await testServer({ SVC_SIGNIN_FAILURES_PER_SOURCE: '3' });
    const user = await registerUser(s.app);
    const ticket = (user as unknown as { sign_in_ticket: string }).sign_in_ticket;
    for (let i = 0; i < 3; i++) {
      expect((await loginFrom('127.0.0.2', { address: `victim${i}@example.org`, password: WRONG })).status).toBe(401);
      s.clock.advance(1000);
    }
    const held = await loginFrom('127.0.0.2', { address: 'victim9@example.org', password: WRONG });
    expect(held.status).toBe(429);
    expect(held.body.code).toBe('error.auth.throttled');
    // Room comes when the first failure (three seconds ago) leaves the hour.
    expect(held.headers.get('retry-after')).toBe('3597');
    // The source is held for every address, the right password included...
    expect((await loginFrom('127.0.0.2', { address: user.address, password: PASSWORD })).status).toBe(429);
    // ...except with a valid ticket for the address.
    expect(
      (await loginFrom('127.0.0.2', { address: user.address, password: PASSWORD, sign_in_ticket: ticket })).status,
    ).toBe(200);
    // Another client address is not held.
    expect((await loginFrom('127.0.0.3', { address: 'victim9@example.org', password: WRONG })).status).toBe(401);
    // The window slides: an hour after the first failure there is room for one more.
    s.clock.advance(3_597_000);
    expect((await loginFrom('127.0.0.2', { address: 'victim9@example.org', password: WRONG })).status).toBe(401);
    expect((await loginFrom('127.0.0.2', { address: 'victim8@example.org', password: WRONG })).status).toBe(429);
  }, 60_000);

  it('behind a trusted proxy the X-Forwarded-For client counts; from anyone else the header is ignored', async () => {
    const from = (xff: string, n: number) =>
      call(s.app, 'POST', '/v1/auth/login', {
        body: { address: `someone${n}@example.org`, password: WRONG },
        headers: { 'x-forwarded-for': xff },
      });
    s = await testServer({ SVC_SIGNIN_FAILURES_PER_SOURCE: '2', SVC_TRUSTED_PROXIES: '127.0.0.1/32' });
    expect((await from('198.51.100.7', 1)).status).toBe(401);
    expect((await from('6.6.6.6, 198.51.100.7', 2)).status).toBe(401);
    expect((await from('198.51.100.7', 3)).status).toBe(429);
    // Another client behind the same proxy is its own source.
    expect((await from('198.51.100.8', 4)).status).toBe(401);
    await s.close();
    // The proxy not listed: the header is the client's to write, and is ignored.
    s = await testServer({ SVC_SIGNIN_FAILURES_PER_SOURCE: '2' });
    expect((await from('198.51.100.1', 1)).status).toBe(401);
    expect((await from('198.51.100.2', 2)).status).toBe(401);
    expect((await from('198.51.100.3', 3)).status).toBe(429);
  }, 60_000);

  it('is held across processes: two servers on one database share the counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pwguess-'));
    const file = join(dir, 'db.sqlite');
    const open = async () => {
      const db = openSqliteDatabase(file);
      const config = readConfig({
        SVC_BASE_URL: 'http://127.0.0.1:8080',
        SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
      });
      const deps = await buildDeps(
        config,
        { ...createSqlitePorts(db), blobs: new MemoryBlobStore(), close: async () => void db.close() },
        {
          clock: new FakeClock(),
          random: new SeededRandom(7),
          logger: new MemoryLogger(),
          hasher: new PlainHasher(),
        },
      );
      return { app: createApp(deps), close: () => deps.stores.close() };
    };
    const [a, b] = [await open(), await open()];
    try {
      const login = (app: typeof a.app, password: string) =>
        call(app, 'POST', '/v1/auth/login', { body: { address: 'shared@example.org', password } });
      expect(
        (
          await call(a.app, 'POST', '/v1/auth/register', {
            body: { address: 'shared@example.org', password: PASSWORD },
          })
        ).status,
      ).toBe(200);
      // Ten wrong passwords spread over both processes, sent together.
      const wrong = await Promise.all(Array.from({ length: 16 }, (_, i) => login(i % 2 === 0 ? a.app : b.app, WRONG)));
      expect(wrong.filter((r) => r.status === 401)).toHaveLength(10);
      expect(wrong.filter((r) => r.status === 429)).toHaveLength(6);
      expect((await login(b.app, PASSWORD)).status).toBe(429);
      expect((await login(a.app, PASSWORD)).status).toBe(429);
    } finally {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a right password does not count as a failure', async () => {
    s = await testServer({ SVC_SIGNIN_FAILURES_PER_SOURCE: '2' });
    const user = await registerUser(s.app);
    for (let i = 0; i < 5; i++)
      expect((await loginFrom('127.0.0.4', { address: user.address, password: PASSWORD })).status).toBe(200);
    expect((await loginFrom('127.0.0.4', { address: user.address, password: WRONG })).status).toBe(401);
    expect((await loginFrom('127.0.0.4', { address: user.address, password: WRONG })).status).toBe(401);
    expect((await loginFrom('127.0.0.4', { address: user.address, password: PASSWORD })).status).toBe(429);
  }, 60_000);
});

/** A fast hasher that counts its checks: the property is about which passwords get checked, not about argon2. */
class CountingPlainHasher extends PlainHasher {
  checks = 0;
  override async verify(hash: string, password: string): Promise<boolean> {
    this.checks++;
    return super.verify(hash, password);
  }
}

describe('password guessing, a property over HTTP', () => {
  it('for any sign-ins with wrong and right passwords, with and without tickets, from several client addresses: at most 10 wrong passwords per address an hour are checked without a ticket, and a valid ticket is never refused for the counts', async () => {
    const ADDRESSES = ['ada@example.org', 'bob@example.org', 'nobody@example.org'];
    const SOURCES = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
    const HOUR = 3_600_000;
    type Step =
      | { kind: 'login'; address: number; right: boolean; source: number; ticket: number | null }
      | { kind: 'wait'; ms: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('login' as const),
          address: fc.nat(2),
          right: fc.boolean(),
          source: fc.nat(2),
          ticket: fc.option(fc.nat(9), { nil: null }),
        }),
      },
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('login' as const),
          address: fc.nat(1),
          right: fc.constant(false),
          source: fc.nat(2),
          ticket: fc.constant(null),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('wait' as const),
          ms: fc.oneof(fc.integer({ min: 1000, max: 120_000 }), fc.integer({ min: 10 * 60_000, max: 2 * HOUR })),
        }),
      },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 45 }), async (steps) => {
        const hasher = new CountingPlainHasher();
        s = await testServer({ SVC_SIGNIN_FAILURES_PER_SOURCE: '12' }, { hasher });
        try {
          const tickets: { value: string; account: number; wrong: number }[] = [];
          for (const address of ADDRESSES.slice(0, 2)) {
            const r = await call(s.app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
            tickets.push({ value: r.body.sign_in_ticket, account: tickets.length, wrong: 0 });
          }
          const checkedWithoutTicket: number[][] = ADDRESSES.map(() => []);
          for (const st of steps) {
            if (st.kind === 'wait') {
              s.clock.advance(st.ms);
              continue;
            }
            const t = st.ticket === null ? null : tickets[st.ticket % tickets.length]!;
            const holds = t !== null && t.account === st.address && t.wrong < 5;
            const before = hasher.checks;
            const r = await loginFrom(SOURCES[st.source]!, {
              address: ADDRESSES[st.address],
              password: st.right ? PASSWORD : WRONG,
              ...(t !== null ? { sign_in_ticket: t.value } : {}),
            });
            if (r.status === 429) {
              // Refused without hashing, and never the holder of a valid ticket.
              expect(hasher.checks).toBe(before);
              expect(holds).toBe(false);
              expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
              continue;
            }
            if (st.right && st.address < 2) {
              expect(r.status).toBe(200);
              tickets.push({ value: r.body.sign_in_ticket, account: st.address, wrong: 0 });
            } else {
              expect(r.status).toBe(401);
              if (holds) t.wrong++;
              else checkedWithoutTicket[st.address]!.push(s.clock.now());
            }
          }
          for (const times of checkedWithoutTicket) {
            for (const from of times)
              expect(times.filter((u) => u >= from && u < from + HOUR).length).toBeLessThanOrEqual(10);
          }
        } finally {
          await s.close();
        }
      }),
      { numRuns: 12 },
    );
  }, 240_000);
});
