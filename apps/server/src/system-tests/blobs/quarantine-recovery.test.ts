import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { startTestS3, useS3rverCredentials, type TestS3 } from '@strongroom/adapters-node/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { createApp } from '../../app.js';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type Stores } from '../../deps.js';
import { call, listen, registerUser, VERSION } from '@strongroom/tests';

/**
 * A gc-sweep killed after it moved a blob into quarantine and before its second ledger read, when
 * a finalize of the same bytes had recorded it meanwhile, leaves the ledger naming a blob that is
 * only in quarantine (the staging already gone). Reads, `blobs verify` and `backup` must not wait
 * for the next sweep: each puts the blob back (core's blobs/handoff.ts). The crash's outcome is
 * made here as the sweep leaves it: an acknowledged upload, then its blob moved into quarantine.
 * On SQLite and PostgreSQL (PG_URL) with blobs on disk, and on S3 (s3rver), where a GET redirects
 * to a presigned URL of the address.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('quarantine-recovery.test.ts: PostgreSQL SKIPPED: PG_URL is not set; SQLite runs.');

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const WRAPPED = Buffer.from('wrapped keys under the link secret').toString('base64url');
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface Backend {
  readonly name: string;
  readonly skip: boolean;
  /** Settings for the deployment, and what to undo after. */
  open(): Promise<{ env: Record<string, string>; close(): Promise<void> }>;
}

let s3: TestS3 | null = null;
const backends: readonly Backend[] = [
  { name: 'SQLite, blobs on disk', skip: false, open: async () => ({ env: {}, close: async () => undefined }) },
  {
    name: 'PostgreSQL, blobs on disk',
    skip: !PG_URL,
    open: async () => {
      const db: ScratchDatabase = await createScratchDatabase(PG_URL!, 'quarantine');
      return { env: { SVC_DATABASE_URL: db.url }, close: () => db.drop() };
    },
  },
  {
    name: 'SQLite, blobs on S3 (s3rver), downloads redirected',
    skip: false,
    open: async () => {
      s3 = await startTestS3();
      const restore = useS3rverCredentials();
      const env = {
        SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
        SVC_S3_ENDPOINT: s3.endpoint,
        SVC_S3_FORCE_PATH_STYLE: 'true',
      };
      return {
        env,
        close: async () => {
          await s3?.stop();
          s3 = null;
          restore();
        },
      };
    },
  },
];

for (const backend of backends) {
  describe.skipIf(backend.skip)(
    `a blob a stopped gc-sweep left in quarantine: ${backend.name}`,
    { timeout: 90_000 },
    () => {
      let work: string;
      let env: Record<string, string>;
      let stores: Stores;
      let server: Awaited<ReturnType<typeof listen>>;
      let closeBackend: () => Promise<void>;
      let token: string;
      let link: string;
      const data = new Uint8Array(5000).map((_, i) => (i * 13 + 7) & 0xff);
      const hash = sha(data);

      beforeAll(async () => {
        work = await mkdtemp(join(tmpdir(), 'quarantine-recovery-'));
        const opened = await backend.open();
        closeBackend = opened.close;
        env = { ...BASE, SVC_DATA_DIR: join(work, 'data'), ...opened.env };
        const config = readConfig(env);
        stores = await openStores(config);
        const app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
        server = await listen(app);
        token = (await registerUser(app)).access_token;
        const accountId = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string })
          .account_id;
        expect(
          (
            await call(app, 'PUT', '/v1/devices/directory', {
              token,
              cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
            })
          ).status,
        ).toBeLessThan(300);
        const opening = await call(app, 'POST', '/upload', {
          token,
          body: { declared_size: data.length, kind: 'original', device_id: 'phone' },
        });
        expect(opening.status).toBe(201);
        const id = (opening.body as { upload_id: string }).upload_id;
        expect(
          (
            await call(app, 'PUT', `/upload/${id}`, {
              token,
              raw: new Uint8Array(data),
              contentType: 'application/octet-stream',
            })
          ).status,
        ).toBe(200);
        expect(
          (await call(app, 'POST', `/upload/${id}/finalize`, { token, body: { content_hash: hash } })).status,
        ).toBe(200);
        const shared = await call(app, 'POST', '/v1/links', {
          token,
          body: { kind: 'share', asset_ids: [id], wrapped_key: WRAPPED },
        });
        expect(shared.status).toBe(201);
        link = (shared.body as { link_id: string }).link_id;
      }, 60_000);
      afterAll(async () => {
        await server?.close();
        await stores?.close();
        await closeBackend?.();
        await rm(work, { recursive: true, force: true });
      });

      // Each case starts from the blob at its address, whatever the one before left.
      afterEach(async () => {
        for (const aside of await stores.blobs.quarantinedCopies(hash)) await stores.blobs.unquarantine(aside);
      });

      /** What the killed sweep leaves: the ledger names the blob, its bytes sit only in quarantine. */
      async function sweepKilledAfterQuarantine(): Promise<void> {
        expect(await stores.quota.findBlob(hash)).not.toBeNull();
        expect(await stores.blobs.quarantine(hash)).not.toBeNull();
        expect(await stores.blobs.has(hash)).toBe(false);
      }
      /** The blob whole at its address, nothing left aside. */
      async function putBack(): Promise<void> {
        expect(await stores.blobs.stat(hash)).toEqual({ size: data.length });
        expect(await stores.blobs.quarantinedCopies(hash)).toEqual([]);
      }
      const get = (path: string, o: { auth?: boolean; method?: string; headers?: Record<string, string> } = {}) =>
        fetch(server.baseUrl + path, {
          method: o.method ?? 'GET',
          headers: {
            'x-svc-protocol': VERSION,
            ...(o.auth === false ? {} : { authorization: `Bearer ${token}` }),
            ...o.headers,
          },
          redirect: 'manual',
        });
      /** The bytes of a 200, or of the presigned URL a 307 names (object storage). */
      async function bytesOf(r: Response): Promise<Uint8Array> {
        if (r.status === 307) {
          const location = r.headers.get('location')!;
          expect(location.startsWith(s3!.endpoint)).toBe(true);
          r = await fetch(location);
        }
        expect(r.status).toBe(200);
        return new Uint8Array(await r.arrayBuffer());
      }

      it('GET of the blob puts it back and answers its bytes (a presigned URL that serves them, on S3)', async () => {
        await sweepKilledAfterQuarantine();
        expect(sha(await bytesOf(await get(`/v1/blobs/${hash}`)))).toBe(hash);
        await putBack();
      });

      it('HEAD puts it back and answers its size', async () => {
        await sweepKilledAfterQuarantine();
        const head = await get(`/v1/blobs/${hash}`, { method: 'HEAD' });
        expect(head.status).toBe(200);
        expect(head.headers.get('content-length')).toBe(String(data.length));
        await putBack();
      });

      it('a Range puts it back and answers those bytes', async () => {
        await sweepKilledAfterQuarantine();
        const ranged = await get(`/v1/blobs/${hash}`, { headers: { range: 'bytes=100-199' } });
        expect(ranged.status).toBe(206);
        expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(data.subarray(100, 200));
        await putBack();
      });

      it('a share link read puts it back and answers its bytes', async () => {
        await sweepKilledAfterQuarantine();
        expect(sha(await bytesOf(await get(`/v1/links/${link}/blobs/${hash}`, { auth: false })))).toBe(hash);
        await putBack();
      });

      it('blobs verify puts it back and finds nothing missing', async () => {
        await sweepKilledAfterQuarantine();
        const v = await runCli(['blobs', 'verify'], env);
        expect(v.out).not.toContain('missing object');
        expect(v).toEqual({
          code: 0,
          out: `put back 1 blob the ledger names from quarantine, where a gc-sweep that stopped midway had left it\n1 ledger entries, 1 objects in the blob store: they agree`,
        });
        await putBack();
      });

      it('backup puts it back and succeeds; the backup verifies', async () => {
        await sweepKilledAfterQuarantine();
        const dir = join(work, `backup-${Date.now()}`);
        const b = await runCli(['backup', '--unencrypted', dir], env);
        expect(b.out).not.toContain('missing');
        expect(b.code, b.out).toBe(0);
        expect(b.out).toContain(`blobs: 1 referenced by the ledger, ${data.length} bytes`);
        await putBack();
        const v = await runCli(['verify-backup', dir], env);
        expect(v.code, v.out).toBe(0);
      });
    },
  );
}
