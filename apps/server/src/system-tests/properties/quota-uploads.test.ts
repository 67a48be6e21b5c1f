import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Argon2Hasher, FsBlobStore } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts } from '@strongroom/adapters-pg';
import { openTestDatabase } from '@strongroom/adapters-pg/testing';
import { FakeClock, MemoryLogger, SeededRandom, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, type AppDeps, type Stores } from '../../deps.js';
import { call, listen, registerUser, testSeed, type CallOptions } from '@strongroom/tests';

/**
 * Quota and upload rules where stores once disagreed with core, over HTTP, each on SQLite and on
 * PostgreSQL (a scratch database on PG_URL, else PGlite), with the filesystem blob store (the one
 * that raced):
 * - federated fills reserve at creation against the hard limit and name a configured peer;
 * - a merge needs the bytes (creation never says whether a hash is stored), and a guest drop,
 *   a bytes-less "merge", a discard and a sweep leave the first uploader charged for nothing;
 * - revoking an upload link cancels its drops still uploading (tokens refused with 401);
 *   two finalizes of one upload racing both answer, once charged;
 * - 29: at most SVC_MAX_OPEN_UPLOADS open sessions per paying account (429 with Retry-After).
 */

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const SEAL = Buffer.from('link-scoped public key').toString('base64url');
const PEERS = [
  'https://p1.example',
  'https://p2.example',
  'https://p3.example',
  'https://p4.example',
  'https://p5.example',
  'https://p6.example',
];
const ENV = {
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
  SVC_QUOTA_SOFT_BYTES: '',
  SVC_QUOTA_HARD_BYTES: '1000000',
  SVC_FEDERATED_BUDGET_PCT: '25',
  SVC_FEDERATION_PEERS: PEERS.join(','),
  SVC_UPLOAD_TTL_S: '600',
  SVC_MAX_OPEN_UPLOADS: '4',
};

interface Backend {
  app: Hono;
  deps: AppDeps;
  clock: FakeClock;
  close(): Promise<void>;
}

async function over(stores: Omit<Stores, 'blobs' | 'close'>, close: () => Promise<void>): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'quota-uploads-'));
  const clock = new FakeClock();
  const deps = await buildDeps(
    readConfig(ENV),
    { ...stores, blobs: new FsBlobStore(dir), close: async () => undefined } as Stores,
    {
      clock,
      random: new SeededRandom(testSeed()),
      logger: new MemoryLogger(),
      hasher: new Argon2Hasher(),
    },
  );
  const app = createApp(deps);
  const served = await listen(app);
  return {
    app,
    deps,
    clock,
    close: async () => {
      await served.close();
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const backends = [
  [
    'SQLite',
    async () => {
      const db = openSqliteDatabase(':memory:');
      return over(createSqlitePorts(db), async () => void db.close());
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const t = await openTestDatabase();
      return over(createPgPorts(t.db), () => t.close());
    },
  ],
] as const;

for (const [name, open] of backends) {
  describe(`quota and upload rules over HTTP: ${name}`, { timeout: 120_000 }, () => {
    let b: Backend;
    beforeAll(async () => {
      b = await open();
    }, 60_000);
    afterAll(async () => {
      await b?.close();
    });

    const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });
    async function user() {
      const u = await registerUser(b.app);
      const token = u.access_token;
      const accountId = (await call(b.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
      const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
      const put = await call(b.app, 'PUT', '/v1/devices/directory', {
        token,
        raw: raw(dir),
        contentType: 'application/cbor',
      });
      if (put.status >= 300) throw new Error(`directory: ${put.status}`);
      return { token, accountId };
    }
    const quota = async (o: CallOptions) => (await call(b.app, 'GET', '/quota', o)).body;
    const upload = (o: CallOptions, body: Record<string, unknown>) =>
      call(b.app, 'POST', '/upload', { ...o, body: { device_id: 'phone', kind: 'original', ...body } });
    const put = (o: CallOptions, id: string, data: Uint8Array) =>
      call(b.app, 'PUT', `/upload/${id}`, { ...o, raw: raw(data), contentType: 'application/octet-stream' });
    const finalize = (o: CallOptions, id: string, hash: string) =>
      call(b.app, 'POST', `/upload/${id}/finalize`, { ...o, body: { content_hash: hash } });
    const guest = (token: string): CallOptions => ({ headers: { authorization: `Upload ${token}` } });
    async function uploadLink(o: CallOptions): Promise<string> {
      const album = await call(b.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' } });
      const l = await call(b.app, 'POST', '/v1/links', {
        ...o,
        body: { kind: 'upload', album_id: album.body.album_id, seal_key: SEAL },
      });
      expect(l.status).toBe(201);
      return l.body.link_id;
    }
    const drop = (linkId: string, body: Record<string, unknown>) =>
      call(b.app, 'POST', `/v1/links/${linkId}/drops`, { body });

    it('a federated fill names a configured peer, reserves its size at creation against the hard limit, and finalize refuses nothing', async () => {
      const a = await user();
      // The reproduction: eight 200 kB fills naming made-up peers, with a 1 MB hard limit.
      for (let i = 0; i < 8; i++) {
        const data = bytes(200_000, i + 1);
        const f = await upload(
          { token: a.token },
          {
            kind: 'federated',
            source_peer: `https://made-up-${i}.example`,
            declared_size: data.length,
            content_hash: sha(data),
          },
        );
        expect(f).toMatchObject(problem(403, 'error.federation.unknown_peer'));
      }
      expect(await quota({ token: a.token })).toMatchObject({ used: 0, reserved: 0 });
      // Configured peers, each within its 250 kB budget: the hard limit holds across them.
      const opened: { id: string; data: Uint8Array }[] = [];
      for (let i = 0; i < 6; i++) {
        const data = bytes(200_000, 20 + i);
        const f = await upload(
          { token: a.token },
          { kind: 'federated', source_peer: PEERS[i], declared_size: data.length, content_hash: sha(data) },
        );
        if (i < 4) {
          expect(f).toMatchObject({ status: 201, body: { state: 'Pending' } });
          opened.push({ id: f.body.upload_id, data });
        } else if (i === 4) {
          // The fifth would be exactly at the limit but the open-session bound (4) is reached first.
          expect(f).toMatchObject(problem(429, 'error.request.too_many'));
        }
      }
      expect(await quota({ token: a.token })).toMatchObject({ used: 800_000, reserved: 800_000 });
      for (const o of opened) {
        expect((await put({ token: a.token }, o.id, o.data)).status).toBe(200);
        expect(await finalize({ token: a.token }, o.id, sha(o.data))).toMatchObject({
          status: 200,
          body: { state: 'Completed' },
        });
      }
      expect(await quota({ token: a.token })).toMatchObject({ used: 800_000, reserved: 0 });
      const fifth = bytes(200_000, 30);
      expect(
        await upload(
          { token: a.token },
          { kind: 'federated', source_peer: PEERS[4], declared_size: 200_000, content_hash: sha(fifth) },
        ),
      ).toMatchObject({ status: 201 });
      const sixth = bytes(1, 31);
      expect(
        await upload(
          { token: a.token },
          { kind: 'federated', source_peer: PEERS[5], declared_size: 1, content_hash: sha(sixth) },
        ),
      ).toMatchObject(problem(403, 'error.quota.exceeded'));
      expect(await quota({ token: a.token })).toMatchObject({ used: 1_000_000, reserved: 200_000 });
    });

    it('creation never says whether a hash is stored, a merge needs the bytes, and the first uploader is freed when nothing references the blob', async () => {
      const owner = await user();
      const other = await user();
      const link = await uploadLink({ token: owner.token });
      const data = bytes(5_000, 77);
      const d = await drop(link, { declared_size: data.length });
      expect(d.status).toBe(201);
      expect((await put(guest(d.body.upload_token), d.body.upload_id, data)).status).toBe(200);
      expect((await finalize(guest(d.body.upload_token), d.body.upload_id, sha(data))).status).toBe(200);
      expect(await quota({ token: owner.token })).toMatchObject({ used: 5_000 });
      // The other account knows only the hash: the same answer as for any hash, and no reference.
      const m = await upload({ token: other.token }, { declared_size: 1, content_hash: sha(data) });
      expect(m).toMatchObject({ status: 201, body: { state: 'Pending' } });
      expect(await finalize({ token: other.token }, m.body.upload_id, sha(data))).toMatchObject(
        problem(409, 'error.conflict'),
      );
      expect(await call(b.app, 'GET', `/v1/assets/${m.body.upload_id}`, { token: other.token })).toMatchObject({
        status: 404,
      });
      // The owner discards the drop; the sweep frees the blob: nobody references it any more.
      expect((await call(b.app, 'DELETE', `/v1/drops/${d.body.upload_id}`, { token: owner.token })).status).toBe(204);
      await b.deps.quota.sweep();
      expect(await quota({ token: owner.token })).toMatchObject({ used: 0, reserved: 0 });
      expect((await b.deps.quota.report(owner.accountId)).blobs).toEqual([]);
    });

    it('revoking an upload link cancels its drops still uploading (tokens 401) and keeps finalized ones', async () => {
      const owner = await user();
      const link = await uploadLink({ token: owner.token });
      const done = bytes(300, 5);
      const d1 = await drop(link, { declared_size: 300 });
      expect((await put(guest(d1.body.upload_token), d1.body.upload_id, done)).status).toBe(200);
      expect((await finalize(guest(d1.body.upload_token), d1.body.upload_id, sha(done))).status).toBe(200);
      const d2 = await drop(link, { declared_size: 700 });
      expect(d2.status).toBe(201);
      expect(await quota({ token: owner.token })).toMatchObject({ used: 1_000, reserved: 700 });
      expect((await call(b.app, 'DELETE', `/v1/links/${link}`, { token: owner.token })).status).toBe(204);
      expect(await quota({ token: owner.token })).toMatchObject({ used: 300, reserved: 0 });
      expect((await put(guest(d2.body.upload_token), d2.body.upload_id, bytes(700, 6))).status).toBe(401);
      expect((await finalize(guest(d1.body.upload_token), d1.body.upload_id, sha(done))).status).toBe(401);
      const list = await call(b.app, 'GET', `/v1/links/${link}/drops`, { token: owner.token });
      // Both drops were opened at the same instant of the fake clock: their order in the list is not the point.
      const states = Object.fromEntries(
        list.body.drops.map((x: { upload_id: string; state: string }) => [x.upload_id, x.state]),
      );
      expect(states).toEqual({ [d1.body.upload_id]: 'ready', [d2.body.upload_id]: 'discarded' });
      expect((await call(b.app, 'POST', `/v1/drops/${d1.body.upload_id}/adopt`, { token: owner.token })).status).toBe(
        200,
      );
    });

    it('two finalizes of one upload racing both answer 200, and the blob is charged once', async () => {
      const a = await user();
      for (let i = 0; i < 5; i++) {
        const data = bytes(64_000, 100 + i);
        const o = await upload({ token: a.token }, { declared_size: data.length });
        expect((await put({ token: a.token }, o.body.upload_id, data)).status).toBe(200);
        const both = await Promise.all([
          finalize({ token: a.token }, o.body.upload_id, sha(data)),
          finalize({ token: a.token }, o.body.upload_id, sha(data)),
        ]);
        expect(both.map((r) => r.status)).toEqual([200, 200]);
        expect(both.map((r) => r.body.state)).toEqual(['Completed', 'Completed']);
      }
      expect(await quota({ token: a.token })).toMatchObject({ used: 320_000, reserved: 0 });
    });

    it('at most SVC_MAX_OPEN_UPLOADS open sessions per paying account (drops and sponsored accounts count toward the payer); 429 with Retry-After, nothing created', async () => {
      const a = await user();
      const kid = (await call(b.app, 'POST', '/v1/sponsored', { token: a.token })).body.account_id as string;
      const link = await uploadLink({ token: a.token });
      expect((await drop(link, { declared_size: 10 })).status).toBe(201);
      expect((await upload({ token: a.token }, { declared_size: 10 })).status).toBe(201);
      expect((await upload({ token: a.token, headers: { 'x-svc-act-as': kid } }, { declared_size: 10 })).status).toBe(
        201,
      );
      const last = await upload({ token: a.token }, { declared_size: 10 });
      expect(last.status).toBe(201);
      const over = await upload({ token: a.token }, { declared_size: 10 });
      expect(over).toMatchObject(problem(429, 'error.request.too_many'));
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await drop(link, { declared_size: 10 })).toMatchObject(problem(429, 'error.request.too_many'));
      expect(await quota({ token: a.token })).toMatchObject({ used: 40, reserved: 40 });
      // Both ways of opening say so in the reference, so a generated client knows the answer.
      const paths = (await call(b.app, 'GET', '/openapi.json', { version: null })).body.paths;
      for (const path of ['/upload', '/v1/links/{link_id}/drops'])
        expect(Object.keys(paths[path].post.responses), path).toContain('429');
      // Another account has its own count; cancelling frees a place.
      expect((await upload({ token: (await user()).token }, { declared_size: 10 })).status).toBe(201);
      expect((await call(b.app, 'DELETE', `/upload/${last.body.upload_id}`, { token: a.token })).status).toBe(200);
      expect((await upload({ token: a.token }, { declared_size: 10 })).status).toBe(201);
    });

    it("guest drops take at most half of the payer's open-session places: a link holder cannot leave the sponsor and its sponsored accounts without uploads", async () => {
      // The sponsor never sees this link unless it acts as the sponsored account that made it.
      const a = await user();
      const kid = (await call(b.app, 'POST', '/v1/sponsored', { token: a.token })).body.account_id as string;
      const link = await uploadLink({ token: a.token, headers: { 'x-svc-act-as': kid } });
      expect((await drop(link, { declared_size: 1 })).status).toBe(201);
      expect((await drop(link, { declared_size: 1 })).status).toBe(201);
      const third = await drop(link, { declared_size: 1 });
      expect(third).toMatchObject(problem(429, 'error.request.too_many'));
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
      // The payer's own uploads, and its sponsored account's, still have the other half.
      expect((await upload({ token: a.token }, { declared_size: 1 })).status).toBe(201);
      expect((await upload({ token: a.token, headers: { 'x-svc-act-as': kid } }, { declared_size: 1 })).status).toBe(
        201,
      );
      expect(await upload({ token: a.token }, { declared_size: 1 })).toMatchObject(
        problem(429, 'error.request.too_many'),
      );
      expect(await quota({ token: a.token })).toMatchObject({ reserved: 4 });
    });
  });
}
