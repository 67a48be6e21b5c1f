import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitAllWrites } from '@strongroom/core';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores } from '../../deps.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function* once(b: Uint8Array): AsyncIterable<Uint8Array> {
  yield b;
}

describe('operator CLI: quota', () => {
  it('sets limits, suspends, shows the ledger and runs the GC sweep against the shared database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-quota-'));
    dirs.push(dir);
    const env = { SVC_DATA_DIR: dir };
    const config = readConfig(env);
    const stores = await openStores(config);
    const deps = await buildDeps(config, stores, { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } });
    const reg = await deps.accounts.register({ address: 'q@example.org', password: 'correct horse battery' });
    if (!reg.ok) throw new Error('register');
    const who = await deps.sessions.authenticate(reg.value.accessToken);
    if (!who.ok) throw new Error('auth');
    const me = { accountId: who.value.accountId };

    expect(await runCli(['quota-limits', 'q@example.org', '100', '200'], env)).toMatchObject({
      code: 0,
      out: expect.stringContaining('soft 100, hard 200'),
    });
    expect(await deps.quota.status(me.accountId)).toMatchObject({ softLimit: 100, hardLimit: 200 });
    expect((await runCli(['quota-limits', 'q@example.org', '300', '200'], env)).code).toBe(1);
    expect((await runCli(['suspend', 'q@example.org'], env)).out).toContain('Suspended');
    expect((await deps.quota.status(me.accountId)).state).toBe('Suspended');
    expect((await runCli(['unsuspend', 'q@example.org'], env)).out).toContain('OK');

    // Store one blob (the write guard is not what this test is about), then purge it.
    const uploads = new (deps.uploads.constructor as typeof import('@strongroom/core').UploadService)({
      sessions: stores.quota,
      assets: stores.quota,
      blobs: stores.blobs,
      quota: deps.quota,
      writeGuard: admitAllWrites,
      clock: deps.clock,
      random: deps.random,
      ttlMs: 60_000,
      dropTtlMs: 60_000,
      federationPeers: [],
    });
    const data = new Uint8Array(150).fill(7);
    const hash = createHash('sha256').update(data).digest('hex');
    const o = await uploads.create(me, {
      declaredSize: 150,
      kind: 'original',
      contentHash: null,
      albumId: null,
      intentId: null,
      deviceId: 'd',
      protocolVersion: '2026-11-01',
    });
    if (!o.ok) throw new Error(o.code);
    await uploads.put(me, o.value.uploadId, once(data), { protocolVersion: '2026-06-01' });
    expect(
      (
        await uploads.finalize(me, o.value.uploadId, {
          protocolVersion: '2026-06-01',
          contentHash: hash,
          manifest: null,
        })
      ).ok,
    ).toBe(true);
    expect(await stores.blobs.has(hash)).toBe(true);
    const ledger = JSON.parse((await runCli(['ledger', 'q@example.org'], env)).out);
    expect(ledger).toMatchObject({
      charged: 150,
      used: 150,
      state: 'SoftWarning',
      blobs: [{ content_hash: hash, size: 150 }],
    });

    await deps.assets.trash(me, o.value.uploadId, { protocolVersion: '2026-06-01', intentId: null });
    await deps.assets.purge(me, o.value.uploadId, { protocolVersion: '2026-06-01', intentId: null });
    expect((await deps.quota.status(me.accountId)).used).toBe(150);
    expect(await runCli(['gc-sweep'], env)).toMatchObject({
      code: 0,
      out: expect.stringContaining(`${me.accountId}: -150 bytes`),
    });
    expect((await deps.quota.status(me.accountId)).used).toBe(0);
    expect(await stores.blobs.has(hash)).toBe(false);
    await stores.close();
  });
});
