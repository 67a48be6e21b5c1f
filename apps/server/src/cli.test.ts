import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { readConfig } from './config.js';
import { buildDeps, nodePlatform, openStores } from './deps.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('operator CLI', () => {
  it('rotates the signing key in the shared database and locks accounts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
    dirs.push(dir);
    const env = { SVC_DATA_DIR: dir };
    const config = readConfig(env);
    const stores = await openStores(config);
    const deps = await buildDeps(config, stores, { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } });
    const reg = await deps.accounts.register({ address: 'ops@example.org', password: 'correct horse battery' });
    expect(reg.ok).toBe(true);
    const before = (await deps.keyRing.jwks()).keys.map((k) => k.kid);

    const rotated = await runCli(['rotate-key'], env);
    expect(rotated.code).toBe(0);
    await deps.keyRing.reload();
    const after = (await deps.keyRing.jwks()).keys.map((k) => k.kid);
    expect(after).toHaveLength(2);
    expect(after).toEqual(expect.arrayContaining(before));

    expect((await runCli(['lock', 'OPS@example.org'], env)).code).toBe(0);
    expect((await stores.accounts.findAccountByAddress('ops@example.org'))?.lockedAt).not.toBeNull();
    expect((await runCli(['unlock', 'ops@example.org'], env)).code).toBe(0);
    expect((await stores.accounts.findAccountByAddress('ops@example.org'))?.lockedAt).toBeNull();
    expect(await runCli(['lock', 'nobody@example.org'], env)).toMatchObject({ code: 1, out: expect.stringContaining('no account') });
    expect((await runCli(['frobnicate'], env)).code).toBe(2);
    await stores.close();
  });
});
