import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cohortHash as coreCohortHash } from '@strongroom/core';
import { testServer, type TestServer } from '@strongroom/tests';
import {
  DeviceKeys,
  IdentityKey,
  OutageError,
  PROTOCOL_VERSION,
  SessionLostError,
  StrongroomClient,
  StrongroomError,
  authenticatorCode,
  cohortHash,
  newUuidV7,
  type SessionTokens,
} from './index.js';

// The client against a real app (real SQLite, real argon2, fake clock) through app.fetch: every
// request the client makes is recorded, so the tests see exactly what went over the wire.

let s: TestServer;
let sent: { method: string; path: string; headers: Headers }[];
let n = 0;

beforeEach(async () => {
  s = await testServer();
  sent = [];
});
afterEach(async () => {
  await s.close();
});

function newClient(
  options: {
    session?: SessionTokens | null;
    protocolVersion?: string;
    onSessionChange?: (t: SessionTokens | null) => void;
  } = {},
) {
  return new StrongroomClient({
    baseUrl: 'http://127.0.0.1:8080',
    ...options,
    fetch: async (request) => {
      sent.push({ method: request.method, path: new URL(request.url).pathname, headers: new Headers(request.headers) });
      return s.app.fetch(request);
    },
  });
}
const PASSWORD = 'correct horse battery staple';
const address = () => `client${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
const refreshes = () => sent.filter((r) => r.path === '/v1/auth/refresh').length;
const ACCESS_TOKEN_LIFETIME_MS = 900_000;

describe('the request pipeline', () => {
  it('sends X-Svc-Protocol on every request and the bearer token while signed in; answers are typed', async () => {
    const changes: (SessionTokens | null)[] = [];
    const client = newClient({ onSessionChange: (t) => changes.push(t) });
    const session = await client.register(address(), PASSWORD);
    expect(changes).toEqual([session]);
    const quota = await client.api.GET('/quota');
    expect(quota.data).toMatchObject({ used: 0, state: 'OK' });
    expect(sent.map((r) => r.headers.get('x-svc-protocol'))).toEqual([PROTOCOL_VERSION, PROTOCOL_VERSION]);
    expect(sent[0]!.headers.get('authorization')).toBeNull();
    expect(sent[1]!.headers.get('authorization')).toBe(`Bearer ${session.accessToken}`);
    expect(client.accountId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });

  it('refreshes once on 401 error.auth.session_invalid and repeats the request, even for several at once', async () => {
    const changes: (SessionTokens | null)[] = [];
    const client = newClient({ onSessionChange: (t) => changes.push(t) });
    const first = await client.register(address(), PASSWORD);
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    const answers = await Promise.all([1, 2, 3, 4].map(() => client.api.GET('/v1/auth/sessions')));
    for (const a of answers) expect(a.response.status).toBe(200);
    expect(refreshes()).toBe(1);
    expect(client.session!.accessToken).not.toBe(first.accessToken);
    expect(client.session!.sessionToken).toBe(first.sessionToken);
    expect(changes.at(-1)).toEqual(client.session);
    // The repeats carried the new token.
    const repeated = sent.filter(
      (r) =>
        r.path === '/v1/auth/sessions' && r.headers.get('authorization') === `Bearer ${client.session!.accessToken}`,
    );
    expect(repeated).toHaveLength(4);
  });

  it("a stale token on a CBOR request is replaced and the request repeated; on an upload's bytes it is replaced, the bytes not sent twice", async () => {
    const first = newClient();
    await first.register(address(), PASSWORD);
    // The first directory (an identity anchor) while the sign-in is recent; the second is the test.
    const identity = IdentityKey.generate();
    const device = DeviceKeys.generate('phone-1');
    const entry = device.entry(Math.floor(s.clock.now() / 1000) - 60);
    expect(await first.publishDirectory(identity.signDirectory(first.accountId!, 1, [entry]))).toEqual({
      seq: 1,
      devices: 1,
    });
    // As after an app restart: the saved tokens, with no idea when the access token runs out.
    const client = newClient({ session: first.session });
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    expect(await client.publishDirectory(identity.signDirectory(client.accountId!, 2, [entry]))).toEqual({
      seq: 2,
      devices: 1,
    });
    expect(refreshes()).toBe(1);
    expect(sent.filter((r) => r.path === '/v1/devices/directory')).toHaveLength(3);

    const opened = await client.api.POST('/upload', {
      body: { declared_size: 3, kind: 'original', device_id: 'phone-1' },
    });
    expect(opened.response.status).toBe(201);
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    const put = () =>
      client.api.PUT('/upload/{id}', {
        params: { path: { id: opened.data!.upload_id } },
        body: new Uint8Array([1, 2, 3]) as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { 'content-type': 'application/octet-stream' },
      });
    const refused = await put();
    expect(refused.error).toMatchObject({ code: 'error.auth.session_invalid' });
    expect(refreshes()).toBe(2);
    expect(sent.filter((r) => r.path.startsWith('/upload/'))).toHaveLength(1);
    // The token was replaced all the same: sent again, the bytes go through.
    expect((await put()).response.ok).toBe(true);
  });

  it('a download through a share link from a server that cannot be reached is an OutageError, not a raw TypeError', async () => {
    const client = new StrongroomClient({ baseUrl: 'http://127.0.0.1:9' });
    const err = await client.download('0'.repeat(64), { linkId: 'A'.repeat(22) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutageError);
    expect(err).toMatchObject({ code: 'error.client.unreachable' });
  });

  it('forgets a session the server no longer honours, and hands back the 401', async () => {
    const changes: (SessionTokens | null)[] = [];
    const client = newClient({ onSessionChange: (t) => changes.push(t) });
    const session = await client.register(address(), PASSWORD);
    const other = newClient();
    await other.signIn((await client.api.GET('/v1/auth/profile')).data!.address as string, PASSWORD);
    expect(
      (
        await other.api.DELETE('/v1/auth/sessions/{session_id}', {
          params: { path: { session_id: session.sessionId } },
        })
      ).response.status,
    ).toBe(204);

    const r = await client.api.GET('/quota');
    expect(r.response.status).toBe(401);
    expect(r.error).toMatchObject({ code: 'error.auth.session_invalid' });
    expect(refreshes()).toBe(1);
    expect(client.session).toBeNull();
    expect(changes.at(-1)).toBeNull();
    await expect(client.refresh()).rejects.toBeInstanceOf(SessionLostError);
    // The convenience calls say it the way docs/client.md promises: SessionLostError, sign in again.
    await expect(client.listSessions()).rejects.toBeInstanceOf(SessionLostError);
  });

  it('surfaces error.auth.unavailable as an outage: no refresh, the session kept', async () => {
    const client = newClient();
    const session = await client.register(address(), PASSWORD);
    s.breakStore();
    const outage = await client.api.GET('/v1/auth/sessions').catch((e: unknown) => e);
    expect(outage).toBeInstanceOf(OutageError);
    expect(outage).toMatchObject({ code: 'error.auth.unavailable', status: 401 });
    expect(refreshes()).toBe(0);
    expect(client.session).toEqual(session);

    // An expired token during the outage: the refresh itself answers 503, still an outage.
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    await expect(client.refresh()).rejects.toMatchObject({
      name: 'OutageError',
      code: 'error.auth.unavailable',
      status: 503,
    });
    expect(client.session).toEqual(session);
    s.mendStore();
    expect((await client.api.GET('/v1/auth/sessions')).response.status).toBe(200);
  });

  it('throws StrongroomError with the problem details from its convenience methods', async () => {
    const client = newClient();
    const who = address();
    await client.register(who, PASSWORD);
    const refused = await client.signIn(who, 'not the password at all').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StrongroomError);
    expect(refused).toMatchObject({
      code: 'error.auth.invalid_credentials',
      status: 401,
      problem: { type: 'about:blank' },
    });
    expect(refused).not.toBeInstanceOf(OutageError);
  });
});

describe('sign-in tickets', () => {
  it("keeps the ticket of each sign-in and sends it on the next login, so a stranger's guessing does not lock the owner out", async () => {
    const who = address();
    const owner = newClient();
    await owner.register(who, PASSWORD);
    const first = owner.signInTicket;
    expect(first).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // A stranger (another client, no ticket) guesses until the address is throttled.
    const stranger = newClient();
    for (let i = 0; i < 10; i++) await stranger.signIn(who, `guess number ${i} is wrong`).catch(() => undefined);
    await expect(stranger.signIn(who, PASSWORD)).rejects.toMatchObject({ code: 'error.auth.throttled', status: 429 });
    // The owner's client sends its ticket: signed in, and it keeps the new one.
    await expect(owner.signIn(who, PASSWORD)).resolves.toMatchObject({ kind: 'session' });
    expect(owner.signInTicket).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(owner.signInTicket).not.toBe(first);
    // A fresh client restored with the kept ticket does the same.
    const restored = newClient();
    await expect(restored.signIn(who, PASSWORD, { signInTicket: owner.signInTicket! })).resolves.toMatchObject({
      kind: 'session',
    });
    const login = sent.filter((r) => r.path === '/v1/auth/login');
    expect(login.length).toBeGreaterThan(0);
  });
});

describe('the client side of the protocol', () => {
  it('signs in through the TOTP challenge with the cohort hash, which the session list shows', async () => {
    const client = newClient();
    const who = address();
    await client.register(who, PASSWORD);
    const accountId = client.accountId!;
    const { secret } = await client.enrollTotp();
    await client.confirmTotp(authenticatorCode(secret, s.clock.now()));
    const cohort = client.cohortHash('android', 'device-42');
    expect(cohort).toBe(coreCohortHash({ userId: accountId, platform: 'android', primaryId: 'device-42' }));
    expect(cohortHash({ userId: accountId, platform: 'android', primaryId: 'device-42' })).toBe(cohort);
    expect(client.cohortHash('android', 'device-43')).not.toBe(cohort);
    expect(client.cohortHash('ios', 'device-42')).not.toBe(cohort);
    const signIn = await client.signIn(who, PASSWORD, { cohortHash: cohort });
    expect(signIn.kind).toBe('challenge');
    if (signIn.kind !== 'challenge') return;
    const session = await client.verifyTotp(signIn.challenge, authenticatorCode(secret, s.clock.now(), 1), {
      cohortHash: cohort,
    });
    const listed = await client.api.GET('/v1/auth/sessions');
    expect(listed.data!.sessions.find((x) => x.session_id === session.sessionId)).toMatchObject({
      cohort_hash: cohort,
      current: true,
    });
  });

  it('builds a directory the server accepts byte for byte, a hybrid-signed intent it accepts, and the revoke-all proof', async () => {
    // Albums pinned to an older version, so there is a newer one to upgrade to.
    const client = newClient({ protocolVersion: '2026-06-01' });
    const who = address();
    await client.register(who, PASSWORD);
    const accountId = client.accountId!;
    const identity = IdentityKey.generate();
    const device = DeviceKeys.generate('phone-1');
    const signed = identity.signDirectory(accountId, 1, [device.entry(Math.floor(s.clock.now() / 1000) - 60)]);
    expect(await client.publishDirectory(signed)).toEqual({ seq: 1, devices: 1 });
    const stored = await client.api.GET('/v1/devices/directory', { parseAs: 'arrayBuffer' });
    expect(new Uint8Array(stored.data as ArrayBuffer)).toEqual(signed);

    // Keys survive a round trip through the key store.
    const restored = DeviceKeys.fromSecrets('phone-1', device.exportSecrets());
    expect(restored.mldsa65).toEqual(device.mldsa65);
    expect(IdentityKey.fromSecret(identity.exportSecret()).publicKey).toEqual(identity.publicKey);

    const album = await client.api.POST('/v1/albums', { body: { device_id: 'phone-1' } });
    expect(album.response.status).toBe(201);
    const albumId = album.data!.album_id;
    const intentId = newUuidV7(s.clock.now());
    const proposed = await client.api.POST('/v1/albums/{album_id}/upgrade', {
      params: { path: { album_id: albumId } },
      body: restored.signUpgradeIntent({
        albumId,
        fromVersion: '2026-06-01',
        toVersion: '2026-09-01',
        intentId,
        deadlineS: 3600,
      }) as never,
      bodySerializer: (b: unknown) => b as BodyInit,
      headers: { 'content-type': 'application/cbor' },
    });
    expect(proposed.response.status).toBe(202);
    expect(proposed.data).toMatchObject({ intent_id: intentId, to_version: '2026-09-01' });

    // A device the directory does not list cannot propose.
    const stranger = DeviceKeys.generate('phone-1');
    const refused = await client.api.POST('/v1/albums/{album_id}/upgrade', {
      params: { path: { album_id: albumId } },
      body: stranger.signUpgradeIntent({
        albumId,
        fromVersion: '2026-06-01',
        toVersion: '2026-09-01',
        intentId: newUuidV7(s.clock.now()),
      }) as never,
      bodySerializer: (b: unknown) => b as BodyInit,
      headers: { 'content-type': 'application/cbor' },
    });
    expect(refused.error).toMatchObject({ code: 'error.album.proposer_invalid' });

    // Revoke-all: a second session too, then the proof closes both.
    await newClient().signIn(who, PASSWORD);
    expect(await client.revokeAll(identity)).toBe(2);
    expect(client.session).toBeNull();
    // A proof by another identity key is refused, and the session stays open.
    await client.signIn(who, PASSWORD);
    await expect(client.revokeAll(IdentityKey.generate())).rejects.toMatchObject({
      name: 'StrongroomError',
      code: 'error.auth.proof_invalid',
    });
    expect((await client.api.GET('/quota')).response.status).toBe(200);
  });
});

describe('signing out, sessions, outages and refresh ahead of expiry', () => {
  it('signs out (the session is closed on the server), lists sessions and revokes another', async () => {
    const who = address();
    const phone = newClient();
    await phone.register(who, PASSWORD);
    const laptop = newClient();
    await laptop.signIn(who, PASSWORD);
    const listed = await phone.listSessions();
    expect(listed.sessions).toHaveLength(2);
    expect(listed.sessions.filter((x) => x.current)).toHaveLength(1);
    await phone.revokeSession(laptop.session!.sessionId);
    expect((await laptop.api.GET('/quota')).response.status).toBe(401);
    const token = phone.session!.accessToken;
    await phone.signOut();
    expect(phone.session).toBeNull();
    // The closed session's access token is refused on the server, not just forgotten here.
    expect(
      (
        await s.app.request('/quota', {
          headers: { 'x-svc-protocol': PROTOCOL_VERSION, authorization: `Bearer ${token}` },
        })
      ).status,
    ).toBe(401);
    await phone.signOut(); // signed out already: nothing to do
  });

  it('deletes the account: the session is forgotten, its token refused, sign-in fails, the address registers anew', async () => {
    const who = address();
    const phone = newClient();
    await phone.register(who, PASSWORD);
    const laptop = newClient();
    await laptop.signIn(who, PASSWORD);
    await phone.deleteAccount();
    expect(phone.session).toBeNull();
    expect((await laptop.api.GET('/quota')).response.status).toBe(401);
    await expect(newClient().signIn(who, PASSWORD)).rejects.toMatchObject({
      name: 'StrongroomError',
      code: 'error.auth.invalid_credentials',
    });
    await newClient().register(who, PASSWORD);
  });

  it('a server that cannot be reached is an OutageError, not a raw TypeError', async () => {
    const client = new StrongroomClient({ baseUrl: 'http://127.0.0.1:9' });
    const err = await client.register(address(), PASSWORD).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutageError);
    expect(err).toMatchObject({ code: 'error.client.unreachable' });
  });

  it("replaces an access token before it runs out by this device's clock, so a body is never sent twice", async () => {
    const client = newClient();
    await client.register(address(), PASSWORD);
    const started = Date.now();
    const realNow = Date.now;
    try {
      // 14 minutes and a half later here (the server's clock agrees: it moved as much).
      Date.now = () => started + 870_000;
      s.clock.advance(870_000);
      const r = await client.api.PATCH('/v1/auth/profile', { body: { display_name: 'Ahead' } });
      expect(r.response.status).toBe(200);
    } finally {
      Date.now = realNow;
    }
    expect(refreshes()).toBe(1);
    // The refresh came first; the PATCH went once, with the new token.
    const order = sent.map((x) => x.path);
    expect(order.indexOf('/v1/auth/refresh')).toBeLessThan(order.indexOf('/v1/auth/profile'));
    expect(sent.filter((x) => x.path === '/v1/auth/profile')).toHaveLength(1);
  });

  it('after a refusal as expired, a JSON body is sent again with the new token; raw bytes are handed back, never copied', async () => {
    const client = newClient();
    await client.register(address(), PASSWORD);
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    const r = await client.api.PATCH('/v1/auth/profile', { body: { display_name: 'Twice' } });
    expect(r.response.status).toBe(200);
    expect(sent.filter((x) => x.path === '/v1/auth/profile')).toHaveLength(2);
    s.clock.advance(ACCESS_TOKEN_LIFETIME_MS + 60_000);
    const bytes = new Uint8Array(1024);
    const put = await client.api.PUT('/upload/{id}', {
      params: { path: { id: newUuidV7() } },
      body: bytes as never,
      bodySerializer: (body: unknown) => body as BodyInit,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.response.status).toBe(401);
    expect(sent.filter((x) => x.method === 'PUT')).toHaveLength(1);
  });

  it('derives the OpenID app_challenge as RFC 7636 S256 (its appendix B vector)', async () => {
    const { oidcChallenge, newOidcVerifier } = await import('./index.js');
    expect(oidcChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
    expect(newOidcVerifier()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(() => oidcChallenge('short')).toThrow(RangeError);
  });
});
