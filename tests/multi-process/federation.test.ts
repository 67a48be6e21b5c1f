import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cryptoRandom, systemClock } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import {
  capabilityClaims,
  FederationService,
  fromBase64url,
  KeyRing,
  SecretBox,
  signCapability,
  toBase64url,
  type CapabilityClaims,
  type Ports,
} from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { fetchCall, type CallOptions, type Reply } from '../harness/http.js';
import { runCliProcess, startServer as startProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * Three real server processes on loopback, each with its own SQLite database, as federated peers:
 * A and C each list B; B lists both. Users find each other by handle across servers; B checks every
 * capability token against its issuer's published keys and revocations, and limits each peer on its
 * own bucket. Ports are random high ones: a server's base URL (and so its handles and the tokens'
 * iss/aud) has to be known before it starts.
 */

const PASSWORD = 'correct horse battery staple';
const RATE = 6;
const REVOKED_CACHE_S = 2;

interface Server {
  readonly url: string;
  readonly listen: string;
  readonly host: string;
  readonly dataDir: string;
  readonly env: Record<string, string>;
  readonly child: ServerProcess['child'];
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server on `port`. `deployment` makes it another process of an existing server: same
 * base URL, data dir, secret key and database, its own port.
 */
async function startServer(
  port: number,
  peers: number[],
  extra: Record<string, string> = {},
  deployment?: Server,
): Promise<Server> {
  const dataDir = deployment?.dataDir ?? mkdtempSync(join(tmpdir(), 'sr-fed-'));
  const url = deployment?.url ?? `http://127.0.0.1:${port}`;
  const env = {
    SVC_SECRET_KEY: deployment?.env['SVC_SECRET_KEY'] ?? randomBytes(32).toString('base64url'),
    SVC_DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_BASE_URL: url,
    SVC_FEDERATION_PEERS: peers.map((p) => `http://127.0.0.1:${p}`).join(','),
    SVC_FEDERATION_RATE: String(RATE),
    SVC_FEDERATION_TIMEOUT_S: '2',
    SVC_FEDERATION_REVOKED_CACHE_S: String(REVOKED_CACHE_S),
    ...extra,
  };
  const proc = await startProcess({ env: { SVC_DATABASE_URL: '', ...env } });
  return {
    url,
    // Where this process listens (another process of a deployment listens elsewhere than its base URL).
    listen: `http://127.0.0.1:${port}`,
    host: new URL(url).host,
    dataDir,
    env,
    child: proc.child,
    stop: () => {
      // A test may have stopped it (SIGSTOP): a stopped process acts on SIGTERM only once resumed.
      proc.child.kill('SIGCONT');
      return proc.stop(5_000);
    },
  };
}

/** The operator CLI as its own process, against a server's database. */
const cli = (server: Server, ...args: string[]) => runCliProcess(args, { SVC_DATABASE_URL: '', ...server.env });

const call = (server: Server, method: string, path: string, o: CallOptions = {}): Promise<Reply> =>
  fetchCall(server.listen, method, path, o);

let n = 0;
/** A signed-in user with a handle and a published directory. */
async function person(server: Server, user: string) {
  const address = `${user}-${++n}@example.org`;
  const r = await call(server, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  expect(r.status).toBe(200);
  const token = r.body.access_token as string;
  const accountId = (await call(server, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  expect((await call(server, 'PUT', '/v1/discovery/handle', { token, body: { user } })).status).toBe(200);
  const identity = new TestIdentity(address);
  const directory = identity.signDirectory(accountId, 1, [new TestDevice(`${user}-phone`)]);
  expect(
    (
      await call(server, 'PUT', '/v1/devices/directory', {
        token,
        raw: directory.slice(),
        contentType: 'application/cbor',
      })
    ).status,
  ).toBe(200);
  return { token, accountId, identity, directory, handle: `${user}@${server.host}` };
}

const lookup = (server: Server, handle: string, authorization: string) =>
  call(server, 'GET', `/v1/discovery/lookup?handle=${encodeURIComponent(handle)}`, { headers: { authorization } });

/** Mints tokens as A itself would, with A's signing ring read from A's database. */
interface Issuer {
  readonly ports: Ports;
  readonly ring: KeyRing;
  readonly federation: FederationService;
  close(): void;
}
async function issuerFor(server: Server, peers: string[]): Promise<Issuer> {
  const db = openSqliteDatabase(join(server.dataDir, 'strongroom.db'));
  const ports = createSqlitePorts(db);
  const box = new SecretBox({ key: fromBase64url(server.env['SVC_SECRET_KEY']!)!, random: cryptoRandom });
  const ring = new KeyRing({
    store: ports.accounts,
    clock: systemClock,
    random: cryptoRandom,
    graceMs: 86_400_000,
    box,
  });
  await ring.reload();
  const unused = {
    verificationKey: async () => null,
    revokedJtis: async () => new Set<string>(),
    lookup: async () => {
      throw new Error('not used');
    },
  };
  const federation = new FederationService({
    keyRing: ring,
    clock: systemClock,
    random: cryptoRandom,
    baseUrl: server.url,
    peers,
    rate: RATE,
    directory: unused,
    forwarder: unused,
    revocations: ports.discovery,
    buckets: ports.discovery,
  });
  return { ports, ring, federation, close: () => db.close() };
}

async function signed(
  issuer: Issuer,
  claims: Partial<CapabilityClaims> & { iss: string; aud: string },
): Promise<string> {
  const base = capabilityClaims({
    issuer: claims.iss,
    peer: claims.aud,
    subject: 'tester',
    now: Date.now(),
    random: cryptoRandom.bytes(10),
  });
  return signCapability({ ...base, ...claims }, await issuer.ring.signingKey());
}

describe('three federated servers on loopback', { timeout: 60_000 }, () => {
  let a: Server;
  let b: Server;
  let c: Server;
  let issuerA: Issuer;
  let bob: Awaited<ReturnType<typeof person>>;

  beforeAll(async () => {
    const [pa, pb, pc] = [await freePort(), await freePort(), await freePort()];
    [a, b, c] = await Promise.all([startServer(pa, [pb]), startServer(pb, [pa, pc]), startServer(pc, [pb])]);
    issuerA = await issuerFor(a, [b.url]);
    bob = await person(b, 'bob');
  }, 90_000);
  afterAll(async () => {
    issuerA?.close();
    await Promise.all([a, b, c].filter(Boolean).map((s) => s.stop()));
    for (const s of [a, b, c].filter(Boolean)) rmSync(s.dataDir, { recursive: true, force: true });
  });

  it('a user of A finds a user of B by handle: A mints a capability token and forwards the lookup', async () => {
    const ann = await person(a, 'ann');
    const r = await lookup(a, bob.handle, `Bearer ${ann.token}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      handle: bob.handle,
      account_id: bob.accountId,
      display_name: null,
      identity_key: expect.any(String),
      directory: expect.any(String),
    });
    // The keys arrive exactly as Bob signed them, for Ann's client to verify itself.
    expect(fromBase64url(r.body.identity_key)).toEqual(bob.identity.publicKey);
    expect(fromBase64url(r.body.directory)).toEqual(bob.directory);
    // An unknown handle on B comes back as B's own 404.
    const missing = await lookup(a, `nobody@${b.host}`, `Bearer ${ann.token}`);
    expect(missing).toMatchObject({ status: 404, body: { code: 'error.not_found' } });
    // A host that is not a peer of A.
    expect(await lookup(a, `carol@${c.host}`, `Bearer ${ann.token}`)).toMatchObject({
      status: 404,
      body: { code: 'error.federation.unknown_peer' },
    });
  });

  it('B refuses forged tokens, tokens for another audience, expired or over-long ones, and access tokens', async () => {
    const good = await signed(issuerA, { iss: a.url, aud: b.url });
    expect((await lookup(b, bob.handle, `SvcCapability ${good}`)).status).toBe(200);

    // Forged: A's kid and claims, signed by a key that is not A's.
    const seed = randomBytes(32);
    const forger = await importJWK(
      { kty: 'OKP', crv: 'Ed25519', x: toBase64url(ed25519.getPublicKey(seed)), d: toBase64url(seed) },
      'EdDSA',
    );
    const { kid } = await issuerA.ring.signingKey();
    const claims = capabilityClaims({
      issuer: a.url,
      peer: b.url,
      subject: 'mallory',
      now: Date.now(),
      random: cryptoRandom.bytes(10),
    });
    const forged = await signCapability(claims, { kid, key: forger as never });
    const forgedUnknownKid = await signCapability(claims, { kid: 'no-such-kid', key: forger as never });
    const otherAudience = await signed(issuerA, { iss: a.url, aud: c.url });
    const iat = Math.floor(Date.now() / 1000);
    const expired = await signed(issuerA, { iss: a.url, aud: b.url, iat: iat - 7200, exp: iat - 3600 });
    const overLong = await signed(issuerA, { iss: a.url, aud: b.url, iat, exp: iat + 7200 });
    const unlistedIssuer = await signed(issuerA, { iss: 'http://127.0.0.1:1', aud: b.url });
    for (const [what, token] of Object.entries({
      forged,
      forgedUnknownKid,
      otherAudience,
      expired,
      overLong,
      unlistedIssuer,
    })) {
      expect(await lookup(b, bob.handle, `SvcCapability ${token}`), what).toMatchObject({
        status: 401,
        body: { code: 'error.federation.capability_invalid' },
      });
    }
    // An access token of A is not a capability token, and a capability token is not an access token.
    const ann = await person(a, 'ann2');
    expect(await lookup(b, bob.handle, `SvcCapability ${ann.token}`)).toMatchObject({
      status: 401,
      body: { code: 'error.federation.capability_invalid' },
    });
    expect(await lookup(b, bob.handle, `Bearer ${good}`)).toMatchObject({
      status: 401,
      body: { code: 'error.auth.session_invalid' },
    });
    expect(await lookup(a, bob.handle, `Bearer ${good}`)).toMatchObject({ status: 401 });
    // A peer's token never relays onward (core's decideLookup): B peers with C, yet A's token
    // asking B about a user of C is B's own 404.
    const carl = await person(c, 'carl');
    expect(await lookup(b, carl.handle, `SvcCapability ${good}`)).toMatchObject({
      status: 404,
      body: { code: 'error.not_found' },
    });
  });

  it('a token revoked on the issuer (operator CLI) is refused by the receiver within its cache window', async () => {
    const { token, claims } = await issuerA.federation.mint(b.url, 'tester');
    expect((await lookup(b, bob.handle, `SvcCapability ${token}`)).status).toBe(200);
    const revoked = await cli(a, 'revoke-capability', claims.jti);
    expect(revoked).toMatchObject({ code: 0 });
    const record = await call(a, 'GET', '/.well-known/svc/revoked-jti', { version: null });
    expect(record.body).toMatchObject({
      issuer: a.url,
      window_s: 86400,
      revoked: [expect.objectContaining({ jti: claims.jti })],
    });
    // Once the receiver's cached copy of the record has aged out (REVOKED_CACHE_S), the token is refused.
    // One lookup after the window rather than polling: polling would spend the small per-peer bucket.
    await new Promise((resolve) => setTimeout(resolve, REVOKED_CACHE_S * 1000 + 300));
    const r = await lookup(b, bob.handle, `SvcCapability ${token}`);
    expect(r).toMatchObject({ status: 401, body: { code: 'error.federation.capability_invalid' } });
    // Revoking every token minted for B catches the ones not yet used too.
    const another = await issuerA.federation.mint(b.url, 'tester');
    expect(await cli(a, 'revoke-peer-capabilities', b.url)).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^revoked [1-9]\d* capability tokens? minted for/),
    });
    await new Promise((resolve) => setTimeout(resolve, REVOKED_CACHE_S * 1000 + 100));
    expect(await lookup(b, bob.handle, `SvcCapability ${another.token}`)).toMatchObject({ status: 401 });
  });

  it('limits each peer on its own bucket: 429 with Retry-After for A, C unaffected, relayed through A', async () => {
    // Registered first, so the relayed lookup follows the refusal at once: the bucket gains a token
    // every 60/RATE s, and a sign-up in between could land after the next one.
    const ann = await person(a, 'ann3');
    let admitted = 0;
    let refused: Reply | null = null;
    for (let i = 0; i < RATE + 2 && refused === null; i++) {
      const r = await lookup(b, bob.handle, `SvcCapability ${await signed(issuerA, { iss: a.url, aud: b.url })}`);
      if (r.status === 200) admitted++;
      else refused = r;
    }
    expect(admitted).toBeLessThanOrEqual(RATE);
    expect(refused).toMatchObject({ status: 429, body: { code: 'error.federation.rate_limited' } });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A's users get B's refusal, Retry-After included.
    const relayed = await lookup(a, bob.handle, `Bearer ${ann.token}`);
    expect(relayed).toMatchObject({ status: 429, body: { code: 'error.federation.rate_limited' } });
    expect(Number(relayed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // C draws from a bucket of its own.
    const carol = await person(c, 'carol');
    expect(await lookup(c, bob.handle, `Bearer ${carol.token}`)).toMatchObject({
      status: 200,
      body: { account_id: bob.accountId },
    });
    // And B's users still find C's.
    expect(await lookup(b, carol.handle, `Bearer ${bob.token}`)).toMatchObject({
      status: 200,
      body: { account_id: carol.accountId },
    });
  });

  it('a peer going away mid-lookup is 502: frozen (timeout), then gone (connection refused)', async () => {
    const carol = await person(c, 'carol2');
    c.child.kill('SIGSTOP');
    try {
      const started = Date.now();
      expect(await lookup(b, carol.handle, `Bearer ${bob.token}`)).toMatchObject({
        status: 502,
        body: { code: 'error.federation.peer_unavailable' },
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      c.child.kill('SIGCONT');
    }
    await c.stop();
    expect(await lookup(b, carol.handle, `Bearer ${bob.token}`)).toMatchObject({
      status: 502,
      body: { code: 'error.federation.peer_unavailable' },
    });
  });
});

/**
 * The per-peer bucket lives in the database: two processes of one deployment (one base URL, one
 * database, two ports) admit at most the rate between them. On SQLite (one data dir) always, and
 * on PostgreSQL when PG_URL is set.
 */
const PG_URL = pgUrlFromEnv();
describe.each([{ store: 'sqlite' as const }, ...(PG_URL ? [{ store: 'postgresql' as const }] : [])])(
  'one peer bucket across two processes of a deployment ($store)',
  { timeout: 60_000 },
  ({ store }) => {
    let a: Server;
    let b1: Server;
    let b2: Server;
    let scratch: ScratchDatabase | null = null;
    let issuerA: Issuer;

    beforeAll(async () => {
      const [pa, pb1, pb2] = [await freePort(), await freePort(), await freePort()];
      scratch = store === 'postgresql' ? await createScratchDatabase(PG_URL!, 'fedbucket') : null;
      const db: Record<string, string> = scratch ? { SVC_DATABASE_URL: scratch.url } : {};
      a = await startServer(pa, [pb1]);
      // Started one after the other: the second finds the schema migrated.
      b1 = await startServer(pb1, [pa], db);
      b2 = await startServer(pb2, [pa], db, b1);
      issuerA = await issuerFor(a, [b1.url]);
    }, 90_000);
    afterAll(async () => {
      issuerA?.close();
      await Promise.all([a, b1, b2].filter(Boolean).map((s) => s.stop()));
      await scratch?.drop();
      for (const s of [a, b1].filter(Boolean)) rmSync(s.dataDir, { recursive: true, force: true });
    });

    it('admits at most the rate across both processes, then 429 from either', async () => {
      const bob = await person(b1, 'bob');
      // Both processes answer for the same handle (one deployment).
      expect((await lookup(b2, bob.handle, `Bearer ${bob.token}`)).status).toBe(200);
      const outcomes: number[] = [];
      const started = Date.now();
      for (let i = 0; i < RATE + 4; i++) {
        const token = await signed(issuerA, { iss: a.url, aud: b1.url });
        outcomes.push((await lookup(i % 2 === 0 ? b1 : b2, bob.handle, `SvcCapability ${token}`)).status);
      }
      // A full bucket, plus one token per 10 s of refill should this machine be slow.
      const refill = Math.floor(((Date.now() - started) * RATE) / 60_000);
      const admitted = outcomes.filter((s) => s === 200).length;
      expect(admitted).toBeGreaterThanOrEqual(RATE);
      expect(admitted).toBeLessThanOrEqual(RATE + refill);
      expect(outcomes.slice(0, RATE)).toEqual(Array(RATE).fill(200));
      expect(outcomes.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      if (refill === 0) expect(outcomes.slice(RATE)).toEqual([429, 429, 429, 429]);
    });
  },
);
