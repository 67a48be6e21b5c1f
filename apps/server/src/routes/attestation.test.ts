import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ed25519 } from '@noble/curves/ed25519.js';
import { canonicalCbor } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../cli.js';
import { readConfig } from '../config.js';
import { buildDeps, nodePlatform, openStores } from '../deps.js';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';

const BASE = 'http://127.0.0.1:8080';
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
      .status,
  ).toBeLessThan(300);
  return { token, accountId };
}

/** create + PUT + finalize; returns the finalize reply. */
async function upload(token: string, data: Uint8Array) {
  const o = await call(s.app, 'POST', '/upload', {
    token,
    body: { device_id: 'phone', kind: 'original', declared_size: data.length },
  });
  expect(o.status).toBe(201);
  expect(
    (
      await call(s.app, 'PUT', `/upload/${o.body.upload_id}`, {
        token,
        raw: raw(data),
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  const f = await call(s.app, 'POST', `/upload/${o.body.upload_id}/finalize`, {
    token,
    body: { content_hash: sha(data) },
  });
  expect(f.status).toBe(200);
  return f.body as { upload_id: string; state: string; receipt: string };
}

interface HistoryEntry {
  seq: number;
  kid: string;
  jwk: JWK & { x: string };
  added_at: number;
  retired_at: string | null;
  prev: string;
  hash: string;
  sig: string;
}
const record = async () =>
  (await call(s.app, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body as {
    keys: (JWK & { kid: string })[];
    history: HistoryEntry[];
  };

/** What a client does with a receipt: find its kid among the keys or in the history, then verify. */
async function verifyReceipt(receipt: string, rec: { keys: JWK[]; history: HistoryEntry[] }) {
  const { kid } = decodeProtectedHeader(receipt);
  const jwk = rec.keys.find((k) => k.kid === kid) ?? rec.history.find((e) => e.kid === kid)?.jwk;
  if (!jwk) throw new Error(`no published attestation key ${kid}`);
  return (
    await jwtVerify(receipt, await importJWK(jwk, 'EdDSA'), {
      typ: 'svc-receipt+jwt',
      issuer: BASE,
      algorithms: ['EdDSA'],
    })
  ).payload;
}

/** The chain as a client checks it, from the published record only (not through the server's code). */
function checkChain(history: HistoryEntry[]): void {
  history.forEach((e, i) => {
    const prev = i === 0 ? null : history[i - 1]!;
    expect(e.seq).toBe(i + 1);
    expect(e.prev).toBe(prev ? prev.hash : '');
    const preimage = canonicalCbor([
      'svc-attestation-history/v1',
      e.seq,
      e.kid,
      Buffer.from(e.jwk.x, 'base64url'),
      e.added_at,
      e.prev,
    ]);
    expect(e.hash).toBe(sha(preimage));
    const signer = Buffer.from((prev ?? e).jwk.x, 'base64url');
    expect(ed25519.verify(Buffer.from(e.sig, 'base64url'), Buffer.from(e.hash, 'hex'), signer)).toBe(true);
  });
}

describe('storage receipts', () => {
  it('every finalize answers a receipt with exactly the decided claims, verified with jose against the published key', async () => {
    const { token, accountId } = await user();
    const data = new Uint8Array(321).fill(5);
    const f = await upload(token, data);
    expect(f.state).toBe('Completed');
    expect(decodeProtectedHeader(f.receipt)).toMatchObject({ alg: 'EdDSA', typ: 'svc-receipt+jwt' });
    const rec = await record();
    expect(rec.keys).toHaveLength(1);
    expect(rec.keys[0]).toEqual({
      kty: 'OKP',
      crv: 'Ed25519',
      x: expect.any(String),
      kid: decodeProtectedHeader(f.receipt).kid,
      alg: 'EdDSA',
      use: 'sig',
    });
    const claims = await verifyReceipt(f.receipt, rec);
    expect(claims).toEqual({
      iss: BASE,
      sub: accountId,
      upload_id: f.upload_id,
      content_hash: sha(data),
      size: 321,
      charged_to: accountId,
      iat: Math.floor(s.clock.now() / 1000),
    });
    // The attestation key is not an access-token key, and a receipt is nothing like an access token.
    const info = (await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null })).body;
    expect(info.signing_keys.keys.map((k: JWK) => k.kid)).not.toContain(rec.keys[0]!.kid);
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: f.receipt })).status).toBe(401);
  });

  it('a merge is attested too: the bytes stay charged to whoever stored them first', async () => {
    const first = await user();
    const second = await user();
    const data = new Uint8Array(50).fill(9);
    await upload(first.token, data);
    // A merge is decided at finalize, once the second uploader's bytes hash to the stored blob.
    const o = await call(s.app, 'POST', '/upload', {
      token: second.token,
      body: { device_id: 'phone', kind: 'original', declared_size: 50, content_hash: sha(data) },
    });
    expect(o.body.state).toBe('Pending');
    expect(
      (
        await call(s.app, 'PUT', `/upload/${o.body.upload_id}`, {
          token: second.token,
          raw: raw(data),
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    const f = await call(s.app, 'POST', `/upload/${o.body.upload_id}/finalize`, {
      token: second.token,
      body: { content_hash: sha(data) },
    });
    expect(f.status).toBe(200);
    expect(f.body.state).toBe('Merged');
    expect(await verifyReceipt(f.body.receipt, await record())).toMatchObject({
      sub: second.accountId,
      charged_to: first.accountId,
      size: 50,
      upload_id: o.body.upload_id,
    });
  });
});

describe('the attestation key history', () => {
  it('starts with one self-signed entry; two rotations append exactly two, chained, and old receipts still verify', async () => {
    const { token } = await user();
    const initial = await record();
    expect(initial.history).toEqual([
      {
        seq: 1,
        kid: initial.keys[0]!.kid,
        jwk: initial.keys[0],
        added_at: Math.floor(s.clock.now() / 1000),
        retired_at: null,
        prev: '',
        hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        sig: expect.any(String),
      },
    ]);
    const r1 = (await upload(token, new Uint8Array(10).fill(1))).receipt;
    s.clock.advance(60_000);
    expect(await COMMANDS['rotate-attestation-key']!.run(s.deps, [])).toMatch(/history entry 2/);
    const r2 = (await upload(token, new Uint8Array(10).fill(2))).receipt;
    s.clock.advance(60_000);
    await COMMANDS['rotate-attestation-key']!.run(s.deps, []);
    const r3 = (await upload(token, new Uint8Array(10).fill(3))).receipt;

    const rec = await record();
    expect(rec.history.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(rec.history[0]).toEqual({
      ...initial.history[0]!,
      retired_at: new Date(s.clock.now() - 60_000).toISOString(),
    });
    expect(rec.history.map((e) => e.retired_at === null)).toEqual([false, false, true]);
    expect(rec.keys.map((k) => k.kid)).toEqual([rec.history[2]!.kid]);
    checkChain(rec.history);
    const kids = [r1, r2, r3].map((r) => decodeProtectedHeader(r).kid);
    expect(kids).toEqual(rec.history.map((e) => e.kid));
    for (const r of [r1, r2, r3]) await expect(verifyReceipt(r, rec)).resolves.toMatchObject({ iss: BASE });
  });
});

describe('start-up re-verification', () => {
  it("a stored history row changed behind the server's back refuses the next start", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-attest-'));
    const env = { SVC_DATA_DIR: dir, SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
    const platform = { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } };
    try {
      const config = readConfig(env);
      const first = await openStores(config);
      const deps = await buildDeps(config, first, platform);
      await deps.attestation.rotate();
      await first.close();
      // An untouched database starts again.
      const again = await openStores(config);
      await buildDeps(config, again, platform);
      await again.close();
      // Someone rewrites entry 1's timestamp directly in the database.
      const db = new Database(join(dir, 'strongroom.db'));
      expect(db.prepare('UPDATE attestation_history SET added_at = added_at - 1 WHERE seq = 1').run().changes).toBe(1);
      db.close();
      const tampered = await openStores(config);
      await expect(buildDeps(config, tampered, platform)).rejects.toThrow(
        /attestation history entry 1 .*hash does not match/,
      );
      await tampered.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
