import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toBase64url } from '@strongroom/core';
import { ConfigError } from './config.js';
import { readConfig } from './config.js';
import { loadOrCreateSecretKey } from './secret-key.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'strongroom-key-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('server secret key', () => {
  it('SVC_SECRET_KEY must be 32 bytes of unpadded base64url', () => {
    const key = new Uint8Array(32).fill(3);
    expect(readConfig({ SVC_SECRET_KEY: toBase64url(key) }).secretKey).toEqual(key);
    expect(readConfig({}).secretKey).toBeNull();
    for (const bad of [
      'short',
      toBase64url(new Uint8Array(31)),
      toBase64url(new Uint8Array(33)),
      `${toBase64url(key)}=`,
    ]) {
      expect(() => readConfig({ SVC_SECRET_KEY: bad })).toThrow(ConfigError);
      expect(() => readConfig({ SVC_SECRET_KEY: bad })).toThrow('SVC_SECRET_KEY');
    }
  });

  it('is generated once into the data dir with mode 0600, then reused', () => {
    const dir = join(tempDir(), 'nested', 'data');
    const first = loadOrCreateSecretKey(dir);
    expect(first.created).toBe(true);
    expect(first.key).toHaveLength(32);
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    const second = loadOrCreateSecretKey(dir);
    expect(second.created).toBe(false);
    expect(second.key).toEqual(first.key);
    expect(readFileSync(first.path, 'utf8').trim()).toBe(toBase64url(first.key));
  });

  it('refuses a damaged or world-readable key file rather than replacing it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'secret.key'), 'not a key\n', { mode: 0o600 });
    expect(() => loadOrCreateSecretKey(dir)).toThrow(ConfigError);
    expect(readFileSync(join(dir, 'secret.key'), 'utf8')).toBe('not a key\n');
    const other = tempDir();
    loadOrCreateSecretKey(other);
    chmodSync(join(other, 'secret.key'), 0o644);
    expect(() => loadOrCreateSecretKey(other)).toThrow('chmod 600');
  });
});
