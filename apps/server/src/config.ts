import * as v from 'valibot';
import { fromBase64url, isProtocolVersion } from '@strongroom/core';

/** Everything the server reads from its environment, validated once at start. */
export interface Config {
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  readonly baseUrl: string;
  readonly sessionIdleMs: number;
  readonly sessionMaxMs: number;
  readonly quotaSoftBytes: number | null;
  readonly quotaHardBytes: number | null;
  readonly quotaGraceMs: number;
  readonly keyGraceMs: number;
  readonly uploadTtlMs: number;
  readonly protocolMin: string;
  readonly protocolMax: string;
  readonly minClientBuild: string;
  /**
   * `SVC_SECRET_KEY`: the 32-byte key sealing TOTP secrets at rest. Null: use (or create) the
   * key file in the data dir.
   */
  readonly secretKey: Uint8Array | null;
  /** How the HTTP server treats slow clients and how long it drains at shutdown (see `main.ts`). */
  readonly http: HttpTimeouts;
}

/** Timeouts of the Node HTTP server, in milliseconds (env vars in seconds). */
export interface HttpTimeouts {
  /** `SVC_HEADERS_TIMEOUT_S`: the request line and every header must arrive within this. */
  readonly headersMs: number;
  /** `SVC_REQUEST_TIMEOUT_S`: the whole request, body included, must arrive within this. */
  readonly requestMs: number;
  /** `SVC_IDLE_TIMEOUT_S`: a connection on which no byte moves for this long is closed (a stalled body). */
  readonly idleMs: number;
  /** `SVC_KEEPALIVE_TIMEOUT_S`: an idle keep-alive connection is closed after this. */
  readonly keepAliveMs: number;
  /** `SVC_SHUTDOWN_GRACE_S`: how long in-flight requests may run on after SIGTERM before being cut. */
  readonly shutdownGraceMs: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const DAY_S = 86_400;

function seconds(env: Record<string, string | undefined>, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback * 1000;
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw) * 1000)) {
    throw new ConfigError(`${name} must be a whole number of seconds >= ${min}, got "${raw}"`);
  }
  return Number(raw) * 1000;
}

function bytes(env: Record<string, string | undefined>, name: string, fallback: number | null): number | null {
  const raw = env[name];
  if (raw === undefined) return fallback;
  if (raw === '') return null; // empty = unlimited
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new ConfigError(`${name} must be a whole number of bytes, or empty for unlimited, got "${raw}"`);
  return Number(raw);
}

function secretKey(env: Record<string, string | undefined>): Uint8Array | null {
  const raw = env.SVC_SECRET_KEY;
  if (raw === undefined || raw === '') return null;
  const key = fromBase64url(raw.trim());
  // Never echo the value: it is a secret even when malformed.
  if (key === null || key.length !== 32) throw new ConfigError('SVC_SECRET_KEY must be 32 bytes as unpadded base64url (43 characters)');
  return key;
}

function version(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name] ?? fallback;
  if (!isProtocolVersion(raw)) throw new ConfigError(`${name} must be a calendar date YYYY-MM-DD, got "${raw}"`);
  return raw;
}

/** Reads and checks the configuration; throws ConfigError naming the variable on any bad value. */
export function readConfig(env: Record<string, string | undefined> = process.env): Config {
  const portRaw = env.PORT ?? '8080';
  if (!/^\d+$/.test(portRaw) || Number(portRaw) > 65535) throw new ConfigError(`PORT must be a port number, got "${portRaw}"`);
  const port = Number(portRaw);
  const baseUrl = env.SVC_BASE_URL ?? `http://localhost:${port}`;
  if (!v.is(v.pipe(v.string(), v.url()), baseUrl) || !/^https?:\/\//.test(baseUrl)) throw new ConfigError(`SVC_BASE_URL must be an http(s) URL, got "${baseUrl}"`);
  const databaseUrl = env.SVC_DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError('SVC_DATABASE_URL must be a postgres:// URL');
  const hardLimit = bytes(env, 'SVC_QUOTA_HARD_BYTES', 10 * 1024 ** 3);
  // Unset, the soft limit follows the hard one (80 %), so setting only the hard limit just works.
  const softLimit = env.SVC_QUOTA_SOFT_BYTES === undefined ? (hardLimit === null ? null : Math.floor(hardLimit * 0.8)) : bytes(env, 'SVC_QUOTA_SOFT_BYTES', null);
  const config: Config = {
    port,
    dataDir: env.SVC_DATA_DIR || './data',
    databaseUrl,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    sessionIdleMs: seconds(env, 'SVC_SESSION_IDLE_S', 180 * DAY_S),
    sessionMaxMs: seconds(env, 'SVC_SESSION_MAX_S', 365 * DAY_S),
    quotaSoftBytes: softLimit,
    quotaHardBytes: hardLimit,
    quotaGraceMs: seconds(env, 'SVC_QUOTA_GRACE_S', 14 * DAY_S),
    // Never shorter than an access token's fifteen minutes, or a retired key would strand live tokens.
    keyGraceMs: seconds(env, 'SVC_KEY_GRACE_S', DAY_S, 900),
    uploadTtlMs: seconds(env, 'SVC_UPLOAD_TTL_S', DAY_S),
    protocolMin: version(env, 'SVC_PROTOCOL_MIN', '2026-03-01'),
    protocolMax: version(env, 'SVC_PROTOCOL_MAX', '2026-11-01'),
    minClientBuild: env.SVC_MIN_CLIENT_BUILD ?? '1',
    secretKey: secretKey(env),
    http: {
      headersMs: seconds(env, 'SVC_HEADERS_TIMEOUT_S', 10),
      requestMs: seconds(env, 'SVC_REQUEST_TIMEOUT_S', 300),
      idleMs: seconds(env, 'SVC_IDLE_TIMEOUT_S', 30),
      keepAliveMs: seconds(env, 'SVC_KEEPALIVE_TIMEOUT_S', 5),
      shutdownGraceMs: seconds(env, 'SVC_SHUTDOWN_GRACE_S', 10),
    },
  };
  if (config.http.headersMs > config.http.requestMs) throw new ConfigError('SVC_HEADERS_TIMEOUT_S must not exceed SVC_REQUEST_TIMEOUT_S');
  if (config.protocolMin > config.protocolMax) throw new ConfigError('SVC_PROTOCOL_MIN must not be after SVC_PROTOCOL_MAX');
  if (config.quotaSoftBytes !== null && config.quotaHardBytes !== null && config.quotaSoftBytes > config.quotaHardBytes) {
    throw new ConfigError('SVC_QUOTA_SOFT_BYTES must not exceed SVC_QUOTA_HARD_BYTES');
  }
  return config;
}
