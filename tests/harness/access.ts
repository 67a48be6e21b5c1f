import { createHash } from 'node:crypto';
import type { Hono } from 'hono';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts } from '@strongroom/adapters-pg';
import { openTestDatabase } from '@strongroom/adapters-pg/testing';
import {
  FakeClock,
  FakeIdentityProvider,
  MemoryDirectBlobStore,
  MemoryLogger,
  SeededRandom,
  TestDevice,
  TestIdentity,
} from '@strongroom/core/testing';
import { createApp } from '@strongroom/server';
import { readConfig } from '@strongroom/server/config';
import { buildDeps, type AppDeps, type Stores } from '@strongroom/server/deps';
import { call, listen, registerUser, testSeed, type CallOptions, type Reply } from './http.js';

/**
 * Test support for object-level access (spec §8.1): a
 * backend (SQLite or PostgreSQL) served on loopback with a dump of every table, and a world of
 * accounts in which Alice sponsors S and S2 and added Bob as an owner of S, with helpers that make
 * each kind of object through the API.
 */

export const PEER = 'https://peer.example';
export const PIN = '2026-06-01';
const ENV = {
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
  SVC_QUOTA_SOFT_BYTES: '',
  SVC_QUOTA_HARD_BYTES: '100000000',
  SVC_FEDERATION_PEERS: PEER,
};

export interface Backend {
  readonly name: string;
  readonly app: Hono;
  readonly deps: AppDeps;
  readonly clock: FakeClock;
  /** The OpenID provider in memory, when the backend was opened with `{ oidc: true }` (return URI OIDC_RETURN). */
  readonly idp: FakeIdentityProvider | null;
  /** Every table's rows, sorted: what a refused request must leave unchanged. */
  dump(): Promise<Record<string, unknown[]>>;
  close(): Promise<void>;
}

export const OIDC_RETURN = 'https://app.example/done';

export interface BackendOptions {
  /** OpenID Connect sign-in on, against a provider in memory (`Backend.idp`). */
  readonly oidc?: boolean;
}

async function served(name: string, stores: Stores, dump: Backend['dump'], options: BackendOptions): Promise<Backend> {
  const clock = new FakeClock();
  const idp = options.oidc === true ? new FakeIdentityProvider('https://idp.example', () => clock.now()) : null;
  const env =
    idp === null
      ? ENV
      : { ...ENV, SVC_OIDC_ISSUER: idp.issuer, SVC_OIDC_CLIENT_ID: 'strongroom', SVC_OIDC_RETURN_URIS: OIDC_RETURN };
  const platform = {
    clock,
    random: new SeededRandom(testSeed()),
    logger: new MemoryLogger(),
    hasher: new Argon2Hasher(),
    ...(idp === null ? {} : { identityProvider: idp }),
  };
  const deps = await buildDeps(readConfig(env), stores, platform);
  const app = createApp(deps);
  const server = await listen(app);
  return {
    name,
    app,
    deps,
    clock,
    idp,
    dump,
    close: async () => {
      await server.close();
      await stores.close();
    },
  };
}

/**
 * Both backends keep blobs in a memory store a client can "send to directly" (core's
 * MemoryDirectBlobStore): POST /upload answers direct_put, and finalize checks what arrived there,
 * so the matrix judges the direct path for every principal as well as the proxied PUT.
 */
export async function sqliteBackend(options: BackendOptions = {}): Promise<Backend> {
  const db = openSqliteDatabase(':memory:');
  const tables = (
    db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
      .all() as { name: string }[]
  ).map((t) => t.name);
  const dump = async () => {
    const out: Record<string, unknown[]> = {};
    for (const t of tables)
      out[t] = (db.prepare(`SELECT * FROM "${t}"`).all() as unknown[])
        .map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)))
        .sort();
    return out;
  };
  return served(
    'SQLite',
    { ...createSqlitePorts(db), blobs: new MemoryDirectBlobStore(), close: async () => void db.close() },
    dump,
    options,
  );
}

export async function pgBackend(options: BackendOptions = {}): Promise<Backend> {
  const t = await openTestDatabase();
  return served(
    'PostgreSQL',
    { ...createPgPorts(t.db), blobs: new MemoryDirectBlobStore(), close: () => t.close() },
    () => t.dump(),
    options,
  );
}

export const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
export const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
export const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');
export const WRAPPED = Buffer.from('wrapped keys under the link secret').toString('base64url');
export const phone = new TestDevice('phone');

/** A registered account: its token and id. */
export interface Account {
  readonly token: string;
  readonly accountId: string;
  readonly address: string;
}

/**
 * Alice sponsors S and S2 and added Bob as an owner of S; Carol is unrelated. Every registered
 * account has published a directory listing `phone`, so each can write as itself and, when an
 * owner, as the sponsored account.
 */
export interface World {
  readonly alice: Account;
  readonly bob: Account;
  readonly carol: Account;
  readonly s: string;
  readonly s2: string;
}

export const as = (token: string, actAs?: string): CallOptions => ({
  token,
  ...(actAs ? { headers: { 'x-svc-act-as': actAs } } : {}),
});
export const guestOf = (uploadToken: string): CallOptions => ({ headers: { authorization: `Upload ${uploadToken}` } });

function expectStatus(r: Reply, status: number, what: string): Reply {
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

async function account(app: Hono): Promise<Account> {
  const u = await registerUser(app);
  const token = u.access_token;
  const accountId = (await call(app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [phone]);
  expectStatus(
    await call(app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }),
    200,
    'directory',
  );
  return { token, accountId, address: u.address };
}

export async function makeWorld(app: Hono): Promise<World> {
  const [alice, bob, carol] = [await account(app), await account(app), await account(app)];
  const s = expectStatus(await call(app, 'POST', '/v1/sponsored', { token: alice.token }), 201, 'sponsor S').body
    .account_id as string;
  const s2 = expectStatus(await call(app, 'POST', '/v1/sponsored', { token: alice.token }), 201, 'sponsor S2').body
    .account_id as string;
  expectStatus(
    await call(app, 'POST', `/v1/sponsored/${s}/owners`, { token: alice.token, body: { account_id: bob.accountId } }),
    200,
    'add Bob',
  );
  return { alice, bob, carol, s, s2 };
}

let seq = 0;
/** Bytes no other call of this process has made (so no upload merges with another). */
export function fresh(size = 64): Uint8Array {
  const b = new Uint8Array(size);
  const tag = createHash('sha256').update(`${process.pid}:${++seq}:${testSeed()}`).digest();
  for (let i = 0; i < size; i++) b[i] = tag[i % tag.length]!;
  return b;
}

/** Makes each kind of object through the API, as the principal `o` (which must be allowed to). */
export class Maker {
  constructor(readonly app: Hono) {}

  async openUpload(
    o: CallOptions,
    extra: Record<string, unknown> = {},
  ): Promise<{ uploadId: string; data: Uint8Array }> {
    const data = fresh();
    const r = expectStatus(
      await call(this.app, 'POST', '/upload', {
        ...o,
        body: { device_id: 'phone', kind: 'original', declared_size: data.length, ...extra },
      }),
      201,
      'open upload',
    );
    return { uploadId: r.body.upload_id, data };
  }

  async put(o: CallOptions, uploadId: string, data: Uint8Array): Promise<void> {
    expectStatus(
      await call(this.app, 'PUT', `/upload/${uploadId}`, {
        ...o,
        raw: raw(data),
        contentType: 'application/octet-stream',
      }),
      200,
      'send bytes',
    );
  }

  /** An upload whose bytes arrived, ready to finalize. */
  async receivedUpload(
    o: CallOptions,
    extra: Record<string, unknown> = {},
  ): Promise<{ uploadId: string; data: Uint8Array }> {
    const u = await this.openUpload(o, extra);
    await this.put(o, u.uploadId, u.data);
    return u;
  }

  /** A live asset (its id is its original's upload id). */
  async asset(o: CallOptions): Promise<string> {
    const u = await this.receivedUpload(o);
    expectStatus(
      await call(this.app, 'POST', `/upload/${u.uploadId}/finalize`, { ...o, body: { content_hash: sha(u.data) } }),
      200,
      'finalize',
    );
    return u.uploadId;
  }

  /** A live asset's original blob: its content hash and the asset's id. */
  async blob(o: CallOptions): Promise<{ contentHash: string; assetId: string }> {
    const u = await this.receivedUpload(o);
    expectStatus(
      await call(this.app, 'POST', `/upload/${u.uploadId}/finalize`, { ...o, body: { content_hash: sha(u.data) } }),
      200,
      'finalize',
    );
    return { contentHash: sha(u.data), assetId: u.uploadId };
  }

  async trashedAsset(o: CallOptions): Promise<string> {
    const id = await this.asset(o);
    expectStatus(await call(this.app, 'POST', `/v1/assets/${id}/trash`, o), 200, 'trash');
    return id;
  }

  /** A federated cache fill from the configured peer, opened (Pending) or with its bytes received. */
  async fill(o: CallOptions, received = false): Promise<{ uploadId: string; data: Uint8Array }> {
    const data = fresh();
    const r = expectStatus(
      await call(this.app, 'POST', '/upload', {
        ...o,
        body: {
          device_id: 'phone',
          kind: 'federated',
          source_peer: PEER,
          content_hash: sha(data),
          declared_size: data.length,
        },
      }),
      201,
      'open fill',
    );
    if (received) await this.put(o, r.body.upload_id, data);
    return { uploadId: r.body.upload_id, data };
  }

  async album(o: CallOptions): Promise<string> {
    return expectStatus(
      await call(this.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' }, version: PIN }),
      201,
      'album',
    ).body.album_id;
  }

  async shareLink(o: CallOptions, assetIds: string[] = []): Promise<string> {
    return expectStatus(
      await call(this.app, 'POST', '/v1/links', {
        ...o,
        body: { kind: 'share', asset_ids: assetIds, wrapped_key: WRAPPED },
      }),
      201,
      'share link',
    ).body.link_id;
  }

  async uploadLink(o: CallOptions): Promise<string> {
    const albumId = await this.album(o);
    return expectStatus(
      await call(this.app, 'POST', '/v1/links', { ...o, body: { kind: 'upload', album_id: albumId, seal_key: SEAL } }),
      201,
      'upload link',
    ).body.link_id;
  }

  /** A guest's drop through a fresh upload link of the principal's account; `ready` sends and finalizes it. */
  async drop(
    o: CallOptions,
    ready = false,
  ): Promise<{ linkId: string; uploadId: string; uploadToken: string; data: Uint8Array }> {
    const linkId = await this.uploadLink(o);
    const data = fresh();
    const r = expectStatus(
      await call(this.app, 'POST', `/v1/links/${linkId}/drops`, { body: { declared_size: data.length } }),
      201,
      'open drop',
    );
    const d = { linkId, uploadId: r.body.upload_id as string, uploadToken: r.body.upload_token as string, data };
    if (ready) {
      await this.put(guestOf(d.uploadToken), d.uploadId, data);
      expectStatus(
        await call(this.app, 'POST', `/upload/${d.uploadId}/finalize`, {
          ...guestOf(d.uploadToken),
          body: { content_hash: sha(data) },
        }),
        200,
        'guest finalize',
      );
    }
    return d;
  }
}
