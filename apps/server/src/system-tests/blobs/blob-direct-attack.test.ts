import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import {
  S3RVER_KEY,
  startInterceptingProxy,
  startTestS3,
  useS3rverCredentials,
  type InterceptingProxy,
  type TestS3,
} from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps, type Stores } from '../../deps.js';
import { StagingSweeper } from '../../staging-sweep.js';
import { call, registerUser } from '@strongroom/tests';

/**
 * Finalize against a store that ignores copy preconditions and checksums (s3rver ignores
 * CopySourceIfMatch, If-None-Match and x-amz-checksum-sha256), and against one that honours them
 * (the same behind a proxy that enforces them as S3 does: no S3 double that honours them installs
 * here from npm or Debian), both behind a proxy that lets the uploader win every race it can: it replaces the staged object through the uploader's still-valid URL right before the
 * server's n-th request that touches it (the HEAD, the copy, the reads). Whatever the moment, no
 * upload ends Completed or Merged with other bytes at its address than the ones it claimed, nothing
 * is charged for bytes that are not there, and another account's blob is never written again.
 */

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const PREFIX = 'lib';
const addressOf = (hash: string): string => `${PREFIX}/blobs/${hash.slice(0, 2)}/${hash}`;

interface Created {
  upload_id: string;
  direct_put: { url: string; headers: Record<string, string> };
}

describe.each([
  ['ignores', false],
  ['honours', true],
] as const)(
  'finalize when the uploader races the copy, on a store that %s preconditions and checksums (s3rver behind a swapping proxy)',
  { timeout: 120_000 },
  (_, honour) => {
    let s3: TestS3;
    let proxy: InterceptingProxy;
    let raw: S3Client;
    let dataDir: string;
    let stores: Stores;
    let app: Awaited<ReturnType<typeof createApp>>;
    let restoreCredentials = (): void => {};

    beforeAll(async () => {
      s3 = await startTestS3();
      proxy = await startInterceptingProxy(s3.endpoint, s3.bucket);
      proxy.honour = honour;
      raw = new S3Client({
        endpoint: s3.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { ...S3RVER_KEY },
      });
      dataDir = await mkdtemp(join(tmpdir(), 's3-attack-'));
      restoreCredentials = useS3rverCredentials();
      const config = readConfig({
        ...BASE,
        SVC_DATA_DIR: dataDir,
        SVC_BLOB_URL: `s3://${s3.bucket}/${PREFIX}`,
        SVC_S3_ENDPOINT: proxy.endpoint,
        SVC_S3_FORCE_PATH_STYLE: 'true',
        SVC_S3_TIMEOUT_S: '5',
      });
      stores = await openStores(config);
      app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
    }, 60_000);
    afterAll(async () => {
      proxy.before = null;
      await stores?.close();
      raw?.destroy();
      await proxy?.close();
      await s3?.stop();
      await rm(dataDir, { recursive: true, force: true });
      restoreCredentials();
    });

    /** A registered account with a device, ready to upload. */
    const account = async () => {
      const { access_token: token } = await registerUser(app);
      const id = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
      expect(
        (
          await call(app, 'PUT', '/v1/devices/directory', {
            token,
            cbor: new TestIdentity(id).signDirectory(id, 1, [new TestDevice('phone')]),
          })
        ).status,
      ).toBeLessThan(300);
      return { token, id };
    };
    /** What is at a content address, read from s3rver itself (not through the proxy). */
    const at = async (hash: string): Promise<string | null> => {
      try {
        const o = await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: addressOf(hash) }));
        return sha(await o.Body!.transformToByteArray());
      } catch {
        return null;
      }
    };
    const charged = async (accountId: string) =>
      (await stores.quota.listChargedBlobs(accountId)).map((b) => b.contentHash);
    const put = (d: Created['direct_put'], body: Uint8Array) =>
      fetch(d.url, { method: 'PUT', headers: d.headers, body: new Uint8Array(body) });

    /** Replaces the staged object through the uploader's URL right before the server's n-th request touching it. */
    const swapAt = (
      n: number,
      staged: string,
      d: Created['direct_put'],
      other: Uint8Array,
    ): { fired: () => boolean } => {
      let count = 0;
      let fired = false;
      proxy.before = async (r) => {
        if (r.key !== staged && r.copySource !== staged) return;
        if (r.method === 'PUT' && r.copySource === null) return; // the swap itself
        if (++count !== n) return;
        proxy.before = null;
        fired = true;
        expect((await put(d, other)).status).toBe(200);
      };
      return { fired: () => fired };
    };

    it('a staged object swapped at any point of finalize never leaves a finalized upload whose address holds other bytes', async () => {
      const me = await account();
      let fired = 0;
      for (let n = 1; n <= 6; n++) {
        const meant = randomBytes(4096);
        const other = randomBytes(4096);
        const u = (
          await call(app, 'POST', '/upload', {
            token: me.token,
            body: { declared_size: meant.length, kind: 'original', device_id: 'phone' },
          })
        ).body as Created;
        expect((await put(u.direct_put, meant)).status).toBe(200);
        const swap = swapAt(n, `${PREFIX}/staging/${u.upload_id}`, u.direct_put, other);
        const done = await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
          token: me.token,
          body: { content_hash: sha(meant) },
        });
        proxy.before = null;
        if (swap.fired()) fired++;
        const state = (done.body as { state?: string }).state;
        if (done.status === 200) {
          expect([n, state]).toEqual([n, 'Completed']);
          expect([n, await at(sha(meant))]).toEqual([n, sha(meant)]);
        } else {
          expect([n, done.status]).toEqual([n, 409]);
          expect(await charged(me.id)).not.toContain(sha(meant));
        }
        // The swapped-in bytes never reach any address, and nothing at the claimed one is other bytes.
        expect([n, await at(sha(other))]).toEqual([n, null]);
        expect([sha(meant), null]).toContain(await at(sha(meant)));
        for (const hash of await charged(me.id)) expect(await at(hash)).toBe(hash);
      }
      // The swap did land inside finalize, before the HEAD and before the copy that takes the
      // staged object in (the only requests of a finalize that touch it), else this proved nothing.
      expect(fired).toBeGreaterThanOrEqual(2);
    });

    it("another account's blob is never written again: a merge copies nothing over it, and a swap during the merge is refused", async () => {
      const victim = await account();
      const attacker = await account();
      const bytes = randomBytes(3000);
      const v = (
        await call(app, 'POST', '/upload', {
          token: victim.token,
          body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
        })
      ).body as Created;
      expect((await put(v.direct_put, bytes)).status).toBe(200);
      expect(
        (
          await call(app, 'POST', `/upload/${v.upload_id}/finalize`, {
            token: victim.token,
            body: { content_hash: sha(bytes) },
          })
        ).body,
      ).toMatchObject({ state: 'Completed' });
      const writesToAddress = (from: number) =>
        proxy.seen.slice(from).filter((r) => r.method === 'PUT' && r.key === addressOf(sha(bytes)));

      // The attacker holds the same bytes: a merge, and the address is not written.
      let mark = proxy.seen.length;
      const same = (
        await call(app, 'POST', '/upload', {
          token: attacker.token,
          body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
        })
      ).body as Created;
      expect((await put(same.direct_put, bytes)).status).toBe(200);
      expect(
        (
          await call(app, 'POST', `/upload/${same.upload_id}/finalize`, {
            token: attacker.token,
            body: { content_hash: sha(bytes) },
          })
        ).body,
      ).toMatchObject({ state: 'Merged' });
      expect(writesToAddress(mark)).toEqual([]);

      // Then swaps the staged object at each point of the finalize: refused or merged, never written.
      for (let n = 1; n <= 5; n++) {
        mark = proxy.seen.length;
        const u = (
          await call(app, 'POST', '/upload', {
            token: attacker.token,
            body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
          })
        ).body as Created;
        expect((await put(u.direct_put, bytes)).status).toBe(200);
        swapAt(n, `${PREFIX}/staging/${u.upload_id}`, u.direct_put, new Uint8Array(bytes.length));
        const done = await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
          token: attacker.token,
          body: { content_hash: sha(bytes) },
        });
        proxy.before = null;
        expect([n, [200, 409]]).toEqual([n, expect.arrayContaining([done.status])]);
        expect([n, writesToAddress(mark)]).toEqual([n, []]);
        expect([n, await at(sha(bytes))]).toEqual([n, sha(bytes)]);
      }
      expect(await charged(victim.id)).toContain(sha(bytes));
    });

    it("the staged object is copied to a key of the server's own and read there once; that copy goes to a new address pinned to its ETag, asking the store not to overwrite (If-None-Match)", async () => {
      const me = await account();
      const bytes = randomBytes(2048);
      const u = (
        await call(app, 'POST', '/upload', {
          token: me.token,
          body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
        })
      ).body as Created;
      expect((await put(u.direct_put, bytes)).status).toBe(200);
      const mark = proxy.seen.length;
      expect(
        (
          await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
            token: me.token,
            body: { content_hash: sha(bytes) },
          })
        ).status,
      ).toBe(200);
      const seen = proxy.seen.slice(mark);
      const own = new RegExp(`^${PREFIX}/received/${u.upload_id}\\.[0-9a-f]{16}$`);
      const takenIn = seen.find((r) => r.method === 'PUT' && own.test(r.key ?? ''));
      expect(takenIn?.copySource).toBe(`${PREFIX}/staging/${u.upload_id}`);
      // The bytes are read once, from the server's own copy; never from the staging key, never back from the address.
      expect(seen.filter((r) => r.method === 'GET' && own.test(r.key ?? ''))).toHaveLength(1);
      expect(seen.filter((r) => r.method === 'GET' && r.key === `${PREFIX}/staging/${u.upload_id}`)).toEqual([]);
      const toAddress = seen.filter((r) => r.key === addressOf(sha(bytes)));
      const copy = toAddress.find((r) => r.method === 'PUT');
      expect(copy?.copySource).toBe(takenIn?.key);
      expect(copy?.headers['if-none-match']).toBe('*');
      expect(copy?.headers['x-amz-copy-source-if-match']).toBeTruthy();
      expect(toAddress.slice(toAddress.indexOf(copy!) + 1).filter((r) => r.method === 'GET')).toEqual([]);
    });

    it('a body whose SHA-256 is not the announced one: refused by a store that checks, and by finalize on one that does not', async () => {
      const me = await account();
      const meant = randomBytes(1000);
      const r = await call(app, 'POST', '/upload', {
        token: me.token,
        body: { declared_size: meant.length, kind: 'original', device_id: 'phone', content_hash: sha(meant) },
      });
      const u = r.body as Created;
      const sent = await put(u.direct_put, randomBytes(1000));
      expect(sent.status).toBe(honour ? 400 : 200);
      expect(
        (
          await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
            token: me.token,
            body: { content_hash: sha(meant) },
          })
        ).status,
      ).toBe(409);
      expect(await at(sha(meant))).toBeNull();
      expect(await charged(me.id)).not.toContain(sha(meant));
    });
  },
);

/**
 * The same attacker against two server processes that share one database and one bucket (each its
 * own deps, its own S3 client, its own in-process turn-taking): finalizes of one session, and first
 * commits of one hash by two accounts, race across them while the attacker swaps staged bytes.
 */
describe('finalize raced across two servers on one database and bucket, while the uploader swaps', {
  timeout: 120_000,
}, () => {
  let s3: TestS3;
  let proxy: InterceptingProxy;
  let raw: S3Client;
  let dataDir: string;
  const servers: { stores: Stores; app: Awaited<ReturnType<typeof createApp>>; deps: AppDeps }[] = [];
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    proxy = await startInterceptingProxy(s3.endpoint, s3.bucket);
    raw = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { ...S3RVER_KEY },
    });
    dataDir = await mkdtemp(join(tmpdir(), 's3-attack-two-'));
    restoreCredentials = useS3rverCredentials();
    const config = readConfig({
      ...BASE,
      SVC_DATA_DIR: dataDir,
      SVC_BLOB_URL: `s3://${s3.bucket}/${PREFIX}`,
      SVC_S3_ENDPOINT: proxy.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '5',
    });
    for (let i = 0; i < 2; i++) {
      const stores = await openStores(config);
      const deps = await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() });
      servers.push({ stores, deps, app: createApp(deps) });
    }
  }, 60_000);
  afterAll(async () => {
    proxy.before = null;
    for (const s of servers) await s.stores.close();
    raw?.destroy();
    await proxy?.close();
    await s3?.stop();
    await rm(dataDir, { recursive: true, force: true });
    restoreCredentials();
  });

  const at = async (hash: string): Promise<string | null> => {
    try {
      const o = await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: addressOf(hash) }));
      return sha(await o.Body!.transformToByteArray());
    } catch {
      return null;
    }
  };
  const put = (d: Created['direct_put'], body: Uint8Array) =>
    fetch(d.url, { method: 'PUT', headers: d.headers, body: new Uint8Array(body) });
  const account = async () => {
    const app = servers[0]!.app;
    const { access_token: token } = await registerUser(app);
    const id = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
    expect(
      (
        await call(app, 'PUT', '/v1/devices/directory', {
          token,
          cbor: new TestIdentity(id).signDirectory(id, 1, [new TestDevice('phone')]),
        })
      ).status,
    ).toBeLessThan(300);
    return { token, id };
  };
  const open = async (token: string, size: number) =>
    (
      await call(servers[0]!.app, 'POST', '/upload', {
        token,
        body: { declared_size: size, kind: 'original', device_id: 'phone' },
      })
    ).body as Created;

  it('one session finalized on both servers at once, a swap at any request: each answers 200 or 409, and the address holds the claimed bytes or nothing', async () => {
    const me = await account();
    for (let n = 1; n <= 6; n++) {
      const meant = randomBytes(4096);
      const u = await open(me.token, meant.length);
      expect((await put(u.direct_put, meant)).status).toBe(200);
      const staged = `${PREFIX}/staging/${u.upload_id}`;
      let count = 0;
      proxy.before = async (r) => {
        if (
          (r.key === staged || r.copySource === staged) &&
          !(r.method === 'PUT' && r.copySource === null) &&
          ++count === n
        ) {
          proxy.before = null;
          expect((await put(u.direct_put, randomBytes(4096))).status).toBe(200);
        }
      };
      const answers = await Promise.all(
        servers.map((s) =>
          call(s.app, 'POST', `/upload/${u.upload_id}/finalize`, {
            token: me.token,
            body: { content_hash: sha(meant) },
          }),
        ),
      );
      proxy.before = null;
      const completed = answers.filter((a) => a.status === 200);
      for (const a of answers) expect([n, [200, 409]]).toEqual([n, expect.arrayContaining([a.status])]);
      if (completed.length > 0) expect([n, await at(sha(meant))]).toEqual([n, sha(meant)]);
      expect([sha(meant), null]).toContain(await at(sha(meant)));
      for (const b of await servers[0]!.stores.quota.listChargedBlobs(me.id))
        expect(await at(b.contentHash)).toBe(b.contentHash);
    }
  });

  it("two accounts commit the same new bytes on the two servers at once while one swaps: the other's blob is never wrong", async () => {
    const victim = await account();
    const attacker = await account();
    for (let n = 1; n <= 5; n++) {
      const bytes = randomBytes(3000);
      const [v, a] = [await open(victim.token, bytes.length), await open(attacker.token, bytes.length)];
      expect((await put(v.direct_put, bytes)).status).toBe(200);
      expect((await put(a.direct_put, bytes)).status).toBe(200);
      const staged = `${PREFIX}/staging/${a.upload_id}`;
      let count = 0;
      proxy.before = async (r) => {
        if (
          (r.key === staged || r.copySource === staged) &&
          !(r.method === 'PUT' && r.copySource === null) &&
          ++count === n
        ) {
          proxy.before = null;
          expect((await put(a.direct_put, new Uint8Array(bytes.length))).status).toBe(200);
        }
      };
      const [mine, theirs] = await Promise.all([
        call(servers[0]!.app, 'POST', `/upload/${v.upload_id}/finalize`, {
          token: victim.token,
          body: { content_hash: sha(bytes) },
        }),
        call(servers[1]!.app, 'POST', `/upload/${a.upload_id}/finalize`, {
          token: attacker.token,
          body: { content_hash: sha(bytes) },
        }),
      ]);
      proxy.before = null;
      // Should the victim's finalize meet the attacker's copy of the same address in flight, it
      // refuses (409, nothing charged, the session still waiting); asked again it completes. It is
      // never completed wrong.
      const settled =
        mine.status === 409
          ? await call(servers[0]!.app, 'POST', `/upload/${v.upload_id}/finalize`, {
              token: victim.token,
              body: { content_hash: sha(bytes) },
            })
          : mine;
      expect([n, settled.status]).toEqual([n, 200]);
      expect([n, [200, 409]]).toEqual([n, expect.arrayContaining([theirs.status])]);
      expect([n, await at(sha(bytes))]).toEqual([n, sha(bytes)]);
      expect(await at(sha(new Uint8Array(bytes.length)))).toBeNull();
    }
  });

  it('the staging sweep runs in one of the two at a time and removes what an old URL sent after a cancel', async () => {
    const me = await account();
    const u = await open(me.token, 2048);
    expect((await call(servers[1]!.app, 'DELETE', `/upload/${u.upload_id}`, { token: me.token })).status).toBe(200);
    expect((await put(u.direct_put, randomBytes(2048))).status).toBe(200);
    const sweepers = servers.map(
      (s) =>
        new StagingSweeper({
          uploads: s.deps.uploads,
          leases: s.stores.deployment,
          intervalMs: 3_600_000,
          clock: { now: () => Date.now() },
          logger: new MemoryLogger(),
        }),
    );
    const outcomes = await Promise.all(sweepers.map((w) => w.tick()));
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['skipped', 'swept']);
    expect(await s3.keys(`${PREFIX}/staging/${u.upload_id}`)).toEqual([]);
  });
});
