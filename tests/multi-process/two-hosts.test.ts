import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { S3RVER_KEY, startTestS3, useS3rverCredentials, type TestS3 } from '@strongroom/adapters-node/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { runCli } from '@strongroom/server/cli';
import { fetchCall, VERSION } from '../harness/http.js';
import { startServer } from '../harness/spawn.js';

/**
 * Several hosts, no shared disk: two server processes, each with its own SVC_DATA_DIR, over one
 * PostgreSQL database and one S3 bucket (s3rver on loopback). Whatever one stores, the other
 * serves, merges, purges and sweeps; neither keeps a blob on its own disk.
 */

const PG_URL = pgUrlFromEnv();
const BASE_URL = 'http://127.0.0.1:8080';
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const SECRET = randomBytes(32).toString('base64url');

if (!PG_URL) console.warn('two-hosts.test.ts: SKIPPED: PG_URL is not set (two processes need a PostgreSQL server).');

interface Host {
  readonly url: string;
  readonly dataDir: string;
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

async function startHost(env: Record<string, string>): Promise<Host> {
  const server = await startServer({ env });
  return { url: server.url, dataDir: env.SVC_DATA_DIR!, env, stop: () => server.stop(5_000) };
}

describe.skipIf(!PG_URL)('two hosts, no shared disk: one PostgreSQL, one bucket', { timeout: 60_000 }, () => {
  let db: ScratchDatabase;
  let s3: TestS3;
  let a: Host;
  let b: Host;

  beforeAll(async () => {
    [db, s3] = await Promise.all([createScratchDatabase(PG_URL!, 'twohosts'), startTestS3()]);
    const shared = {
      SVC_SECRET_KEY: SECRET,
      SVC_BASE_URL: BASE_URL,
      SVC_DATABASE_URL: db.url,
      SVC_BLOB_URL: `s3://${s3.bucket}/fleet`,
      SVC_S3_ENDPOINT: s3.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey,
    };
    const host = (name: string) => ({ ...shared, SVC_DATA_DIR: mkdtempSync(join(tmpdir(), `sr-host-${name}-`)) });
    [a, b] = await Promise.all([startHost(host('a')), startHost(host('b'))]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a, b].filter(Boolean).map((h) => h.stop()));
    await db?.drop();
    await s3?.stop();
    for (const h of [a, b].filter(Boolean)) rmSync(h.dataDir, { recursive: true, force: true });
  });

  async function account(host: Host) {
    const address = `fleet-${randomBytes(4).toString('hex')}@example.org`;
    const r = await fetchCall(host.url, 'POST', '/v1/auth/register', {
      body: { address, password: 'correct horse battery staple' },
    });
    expect(r.status).toBe(200);
    const token = (r.body as { access_token: string }).access_token;
    const id = ((await fetchCall(host.url, 'GET', '/v1/auth/profile', { token })).body as { account_id: string })
      .account_id;
    expect(
      (
        await fetchCall(host.url, 'PUT', '/v1/devices/directory', {
          token,
          cbor: new TestIdentity(id).signDirectory(id, 1, [new TestDevice('phone')]),
        })
      ).status,
    ).toBeLessThan(300);
    return { token, id };
  }

  it('an upload through A is downloaded, merged, purged and swept through B', async () => {
    const alice = await account(a);
    const bob = await account(b);
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 17) & 0xff);
    const hash = sha(bytes);

    // Through A: the bytes go straight to the bucket with A's presigned PUT.
    const opened = await fetchCall(a.url, 'POST', '/upload', {
      token: alice.token,
      body: { declared_size: bytes.length, kind: 'original', device_id: 'phone', content_hash: hash },
    });
    expect(opened.status).toBe(201);
    const { upload_id: uploadId, direct_put: direct } = opened.body as {
      upload_id: string;
      direct_put: { url: string; headers: Record<string, string> };
    };
    expect((await fetch(direct.url, { method: 'PUT', headers: direct.headers, body: bytes })).status).toBe(200);
    expect(
      (
        await fetchCall(a.url, 'POST', `/upload/${uploadId}/finalize`, {
          token: alice.token,
          body: { content_hash: hash },
        })
      ).body,
    ).toMatchObject({ state: 'Completed' });

    // Through B: the 307 to the bucket serves Alice the same bytes.
    const got = await fetch(`${b.url}/v1/blobs/${hash}`, {
      headers: { authorization: `Bearer ${alice.token}`, 'x-svc-protocol': VERSION },
      redirect: 'manual',
    });
    expect(got.status).toBe(307);
    expect(sha(new Uint8Array(await (await fetch(got.headers.get('location')!)).arrayBuffer()))).toBe(hash);

    // Through B: Bob's upload of the same bytes (proxied) is a merge, charged nothing.
    const bobs = await fetchCall(b.url, 'POST', '/upload', {
      token: bob.token,
      body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
    });
    const bobUpload = (bobs.body as { upload_id: string }).upload_id;
    expect(
      (
        await fetchCall(b.url, 'PUT', `/upload/${bobUpload}`, {
          token: bob.token,
          raw: bytes,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await fetchCall(b.url, 'POST', `/upload/${bobUpload}/finalize`, {
          token: bob.token,
          body: { content_hash: hash },
        })
      ).body,
    ).toMatchObject({ state: 'Merged' });
    expect(((await fetchCall(b.url, 'GET', '/quota', { token: alice.token })).body as { used: number }).used).toBe(
      bytes.length,
    );
    expect(((await fetchCall(b.url, 'GET', '/quota', { token: bob.token })).body as { used: number }).used).toBe(0);

    // Through B: both purge; B's sweep removes the object and credits Alice.
    for (const [who, asset] of [
      [alice, uploadId],
      [bob, bobUpload],
    ] as const) {
      expect((await fetchCall(b.url, 'POST', `/v1/assets/${asset}/trash`, { token: who.token })).status).toBe(200);
      expect((await fetchCall(b.url, 'DELETE', `/v1/assets/${asset}`, { token: who.token })).status).toBeLessThan(300);
    }
    expect(await s3.keys('fleet/blobs/')).toEqual([`fleet/blobs/${hash.slice(0, 2)}/${hash}`]);
    // B's operator CLI, run here: the SDK takes its credentials from this process's environment.
    const restoreCredentials = useS3rverCredentials();
    const swept = await runCli(['gc-sweep'], b.env).finally(restoreCredentials);
    expect(swept).toMatchObject({ code: 0, out: expect.stringContaining('swept 1 blobs') });
    expect(await s3.keys('fleet/')).toEqual([]);
    expect(((await fetchCall(a.url, 'GET', '/quota', { token: alice.token })).body as { used: number }).used).toBe(0);
    expect((await fetchCall(a.url, 'GET', `/v1/blobs/${hash}`, { token: alice.token })).status).toBe(404);

    // Neither host kept a blob on its own disk.
    for (const h of [a, b]) expect(readdirSync(h.dataDir)).not.toContain('blobs');
  });
});
