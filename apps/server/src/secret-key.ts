import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBase64url, toBase64url } from '@strongroom/core';
import { ConfigError } from './config.js';

export const SECRET_KEY_BYTES = 32;
export const SECRET_KEY_FILE = 'secret.key';

/**
 * The server key that seals TOTP secrets at rest: `${dataDir}/secret.key` (base64url text, mode
 * 0600), created on first start. `wx` makes creation exclusive, so two processes starting at once
 * on one data dir end up with the same key. Never logged. `create: false` (a command on an existing
 * deployment) only reads it: a missing file is refused, naming it, and none is made.
 */
export function loadOrCreateSecretKey(
  dataDir: string,
  options: { create?: boolean } = {},
): { key: Uint8Array; created: boolean; path: string } {
  const path = join(dataDir, SECRET_KEY_FILE);
  let created = false;
  if (options.create ?? true) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    try {
      writeFileSync(path, `${toBase64url(new Uint8Array(randomBytes(SECRET_KEY_BYTES)))}\n`, {
        mode: 0o600,
        flag: 'wx',
      });
      created = true;
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'EEXIST') throw cause;
    }
  } else if (!existsSync(path)) {
    throw new ConfigError(
      `${path} is missing: the deployment's secret key is not in SVC_DATA_DIR; restore it (its secrets are sealed under it) or set SVC_SECRET_KEY. No new key was made`,
    );
  }
  const key = fromBase64url(readFileSync(path, 'utf8').trim());
  if (key === null || key.length !== SECRET_KEY_BYTES) {
    throw new ConfigError(
      `${path} does not hold a ${SECRET_KEY_BYTES}-byte base64url key; restore it (TOTP secrets are sealed under it) or set SVC_SECRET_KEY`,
    );
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new ConfigError(`${path} is readable by other users; chmod 600 it`);
  }
  return { key, created, path };
}
