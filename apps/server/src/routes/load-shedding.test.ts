import { afterEach, describe, expect, it } from 'vitest';
import type { PasswordHasher } from '@strongroom/core';
import { PlainHasher } from '@strongroom/core/testing';
import { PASSWORD, call, registerUser, testServer, type Reply, type TestServer } from '../testing.js';

/**
 * Sign-in load shedding (decisions.md, end of "Isolation, secrets and durability"): password checks
 * wait in one bounded queue (SVC_HASH_QUEUE); past it, register, login, password change and
 * reauthenticate answer 503 error.server.busy with Retry-After: 1 and do nothing.
 */

/** A hasher whose every call waits until the test lets it go. */
class SlowHasher implements PasswordHasher {
  readonly inner = new PlainHasher();
  held: (() => void)[] = [];
  slow = false;
  calls = 0;
  async #gate(): Promise<void> {
    this.calls++;
    if (this.slow) await new Promise<void>((go) => this.held.push(go));
  }
  async hash(password: string): Promise<string> {
    await this.#gate();
    return this.inner.hash(password);
  }
  async verify(hash: string, password: string): Promise<boolean> {
    await this.#gate();
    return this.inner.verify(hash, password);
  }
  release(): void {
    this.slow = false;
    for (const go of this.held.splice(0)) go();
  }
}

let s: TestServer;
afterEach(async () => {
  await s.close();
});

const busy = (r: Reply) => r.status === 503 && r.body?.code === 'error.server.busy' && r.headers.get('retry-after') === '1';
const until = async (what: () => boolean) => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('sign-in load shedding', () => {
  it('past the queue, register, login, password change and reauthenticate are 503 busy with Retry-After: 1 and change nothing', async () => {
    const hasher = new SlowHasher();
    s = await testServer({ SVC_HASH_QUEUE: '2' }, { hasher });
    const u = await registerUser(s.app);
    const accounts = () => (s.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number }).n;
    const sessions = () => (s.db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
    const before = { accounts: accounts(), sessions: sessions() };
    hasher.slow = true;
    // Fill what may run and what may wait: these are held, not refused.
    const filling = Array.from({ length: 8 }, (_, i) => call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: i === 0 ? PASSWORD : `${PASSWORD} no ${i}` } }));
    await until(() => hasher.held.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    const admitted = hasher.calls;
    // Over the bound now: every password route refuses at once, without waiting for the hasher.
    const refused = await Promise.all([
      call(s.app, 'POST', '/v1/auth/register', { body: { address: 'shed@example.org', password: PASSWORD } }),
      call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } }),
      call(s.app, 'POST', '/v1/auth/password', { token: u.access_token, body: { current_password: PASSWORD, new_password: `${PASSWORD} 2` } }),
      call(s.app, 'POST', '/v1/auth/reauthenticate', { token: u.access_token, body: { password: PASSWORD } }),
    ]);
    for (const r of refused) expect(busy(r), JSON.stringify({ status: r.status, body: r.body })).toBe(true);
    expect(hasher.calls).toBe(admitted);
    hasher.release();
    const filled = await Promise.all(filling);
    // Some of the eight were admitted (the first one's right password signs in), the rest refused as busy.
    expect(filled.filter(busy).length).toBeGreaterThan(0);
    expect(filled.every((r) => busy(r) || r.status === 200 || r.status === 401)).toBe(true);
    // Nothing recorded: no account, the password unchanged, only the sessions the admitted logins opened.
    expect(accounts()).toBe(before.accounts);
    expect((await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } })).status).toBe(200);
    expect(sessions()).toBe(before.sessions + filled.filter((r) => r.status === 200).length + 1);
    // Once the queue drains, everything works again.
    expect((await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'shed@example.org', password: PASSWORD } })).status).toBe(200);
  });

  it('during a flood that fills the queue, authenticated requests are answered without waiting for a hash, and none is refused', async () => {
    const hasher = new SlowHasher();
    s = await testServer({ SVC_HASH_QUEUE: '4' }, { hasher });
    const u = await registerUser(s.app);
    hasher.slow = true;
    // The flood: more sign-ins than may run and wait together.
    const flood = Array.from({ length: 40 }, () => call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } }));
    await until(() => hasher.held.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    // Full: the next sign-in is shed at once.
    expect(busy(await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } }))).toBe(true);
    const held = hasher.held.length;
    const calls = hasher.calls;
    // Every hash is still held, so each of these was answered without waiting behind one.
    const answered = await Promise.all([
      call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token }),
      call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: 'During the flood' } }),
      call(s.app, 'GET', '/v1/auth/sessions', { token: u.access_token }),
      call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } }),
      call(s.app, 'GET', '/quota', { token: u.access_token }),
    ]);
    expect(answered.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect({ held: hasher.held.length, calls: hasher.calls }).toEqual({ held, calls });
    hasher.release();
    const floodReplies = await Promise.all(flood);
    expect(floodReplies.every((r) => r.status === 200 || busy(r))).toBe(true);
  });
});
