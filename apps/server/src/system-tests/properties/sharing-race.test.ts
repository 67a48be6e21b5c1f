import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Argon2Hasher, cryptoRandom, systemClock } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts } from '@strongroom/adapters-pg';
import { openTestDatabase, type TestDatabase } from '@strongroom/adapters-pg/testing';
import { linkIdHash } from '@strongroom/core';
import { MemoryBlobStore, MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, type AppDeps, type Stores } from '../../deps.js';
import { call, registerUser, type CallOptions } from '@strongroom/tests';

/**
 * Concurrency of the sharing paths over real databases, through the HTTP app: 50 guests opening
 * drops at once on one link whose owner is near the hard limit (and on a link near its max_bytes),
 * and 50 federated cache fills at once near a per-peer budget. Nothing may overshoot. On SQLite the
 * requests alternate between two apps on two connections to one file; on PostgreSQL one app runs
 * on a pool (a scratch database on PG_URL, else PGlite).
 */

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const SEAL = Buffer.from('link-scoped public key').toString('base64url');
const env = {
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
  SVC_QUOTA_SOFT_BYTES: '',
  SVC_QUOTA_HARD_BYTES: '10000',
  SVC_FEDERATED_BUDGET_PCT: '30',
  SVC_FEDERATION_PEERS: 'https://peer.example',
};

interface Backend {
  apps: Hono[];
  deps: AppDeps;
  close(): Promise<void>;
}

async function appOver(stores: Stores): Promise<{ app: Hono; deps: AppDeps }> {
  const deps = await buildDeps(readConfig(env), stores, {
    clock: systemClock,
    random: cryptoRandom,
    logger: new MemoryLogger(),
    hasher: new Argon2Hasher(),
  });
  return { app: createApp(deps), deps };
}

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'sharing-race-'));
  const file = join(dir, 'race.db');
  const blobs = new MemoryBlobStore();
  const dbs = [openSqliteDatabase(file), openSqliteDatabase(file)];
  const made = [];
  for (const db of dbs)
    made.push(await appOver({ ...createSqlitePorts(db), blobs, close: async () => void db.close() }));
  return {
    apps: made.map((m) => m.app),
    deps: made[0]!.deps,
    close: async () => {
      for (const db of dbs) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function pgBackend(): Promise<Backend> {
  const t: TestDatabase = await openTestDatabase();
  const made = await appOver({ ...createPgPorts(t.db), blobs: new MemoryBlobStore(), close: () => t.close() });
  return { apps: [made.app], deps: made.deps, close: () => t.close() };
}

for (const [name, open] of [
  ['SQLite file, two connections', sqliteBackend],
  ['PostgreSQL', pgBackend],
] as const) {
  describe(`sharing under concurrency: ${name}`, { timeout: 120_000 }, () => {
    let b: Backend;
    const app = (i: number): Hono => b.apps[i % b.apps.length]!;
    beforeAll(async () => {
      b = await open();
    }, 60_000);
    afterAll(async () => {
      await b?.close();
    });

    async function owner() {
      const u = await registerUser(app(0));
      const token = u.access_token;
      const accountId = (await call(app(0), 'GET', '/v1/auth/profile', { token })).body.account_id as string;
      const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
      expect(
        (await call(app(0), 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
          .status,
      ).toBe(200);
      const albumId = (await call(app(0), 'POST', '/v1/albums', { token, body: { device_id: 'phone' } })).body
        .album_id as string;
      const link = async (extra: Record<string, unknown> = {}) => {
        const r = await call(app(0), 'POST', '/v1/links', {
          token,
          body: { kind: 'upload', album_id: albumId, seal_key: SEAL, ...extra },
        });
        expect(r.status).toBe(201);
        return r.body.link_id as string;
      };
      return { token, accountId, link };
    }

    it("50 concurrent drops on one link never pass the owner's hard limit", async () => {
      const o = await owner();
      const first = await o.link();
      expect((await call(app(0), 'POST', `/v1/links/${first}/drops`, { body: { declared_size: 9_050 } })).status).toBe(
        201,
      );
      const linkId = await o.link();
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          call(app(i), 'POST', `/v1/links/${linkId}/drops`, { body: { declared_size: 100 } }),
        ),
      );
      const statuses = replies.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(9);
      expect(replies.filter((r) => r.status === 403).every((r) => r.body.code === 'error.quota.exceeded')).toBe(true);
      expect(statuses.filter((s) => s !== 201 && s !== 403)).toEqual([]);
      const q = (await call(app(0), 'GET', '/quota', { token: o.token })).body;
      expect(q).toMatchObject({ used: 9_950, reserved: 9_950, hard_limit: 10_000 });
      expect((await call(app(0), 'GET', `/v1/links/${linkId}/drops`, { token: o.token })).body.drops).toHaveLength(9);
      // Refused drops gave their link bytes back.
      expect((await b.deps.stores.links.findLink(linkIdHash(linkId)!))!.acceptedBytes).toBe(900);
    });

    it("50 concurrent drops never pass the link's max_bytes", async () => {
      const o = await owner();
      const linkId = await o.link({ max_bytes: 2_050 });
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          call(app(i), 'POST', `/v1/links/${linkId}/drops`, { body: { declared_size: 100 } }),
        ),
      );
      expect(replies.filter((r) => r.status === 201)).toHaveLength(20);
      expect(
        replies
          .filter((r) => r.status !== 201)
          .every((r) => r.status === 403 && r.body.code === 'error.quota.exceeded'),
      ).toBe(true);
      expect((await call(app(0), 'GET', '/quota', { token: o.token })).body).toMatchObject({
        used: 2_000,
        reserved: 2_000,
      });
      expect((await b.deps.stores.links.findLink(linkIdHash(linkId)!))!.acceptedBytes).toBe(2_000);
    });

    it('50 concurrent federated caches never pass the per-peer budget', async () => {
      const o = await owner();
      const peer = 'https://peer.example';
      const auth: CallOptions = { token: o.token };
      // The budget is 30 % of 10,000 = 3,000; 2,500 are cached already.
      const base = new Uint8Array(2_500).fill(1);
      const first = await call(app(0), 'POST', '/upload', {
        ...auth,
        body: {
          kind: 'federated',
          source_peer: peer,
          declared_size: base.length,
          content_hash: sha(base),
          device_id: 'phone',
        },
      });
      await call(app(0), 'PUT', `/upload/${first.body.upload_id}`, {
        ...auth,
        raw: raw(base),
        contentType: 'application/octet-stream',
      });
      expect(
        (
          await call(app(0), 'POST', `/upload/${first.body.upload_id}/finalize`, {
            ...auth,
            body: { content_hash: sha(base) },
          })
        ).status,
      ).toBe(200);
      const blobs = Array.from({ length: 50 }, (_, i) => new Uint8Array(30).fill(i + 10));
      const opened = await Promise.all(
        blobs.map((data, i) =>
          call(app(i), 'POST', '/upload', {
            ...auth,
            body: {
              kind: 'federated',
              source_peer: peer,
              declared_size: data.length,
              content_hash: sha(data),
              device_id: 'phone',
            },
          }),
        ),
      );
      expect(opened.filter((r) => r.status === 201)).toHaveLength(16); // floor(500 / 30)
      expect(
        opened
          .filter((r) => r.status !== 201)
          .every((r) => r.status === 403 && r.body.code === 'error.quota.federated_budget'),
      ).toBe(true);
      // Every accepted fill completes, concurrently: the cache ends within the budget.
      const done = await Promise.all(
        opened.map(async (r, i) => {
          if (r.status !== 201) return null;
          const id = r.body.upload_id as string;
          await call(app(i), 'PUT', `/upload/${id}`, {
            ...auth,
            raw: raw(blobs[i]!),
            contentType: 'application/octet-stream',
          });
          return (
            await call(app(i + 1), 'POST', `/upload/${id}/finalize`, {
              ...auth,
              body: { content_hash: sha(blobs[i]!) },
            })
          ).status;
        }),
      );
      expect(done.filter((s) => s !== null).every((s) => s === 200)).toBe(true);
      const cached = (await b.deps.quota.report(o.accountId)).blobs
        .filter((x) => x.peer === peer)
        .reduce((n, x) => n + x.size, 0);
      expect(cached).toBe(2_500 + 16 * 30);
      expect(cached).toBeLessThanOrEqual(3_000);
    });
  });
}
