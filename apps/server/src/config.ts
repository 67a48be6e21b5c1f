import { availableParallelism } from 'node:os';
import * as v from 'valibot';
import {
  DEFAULT_DIRECT_PUT_TTL_S,
  DEFAULT_PART_BYTES,
  MAX_PART_BYTES,
  MIN_PART_BYTES,
  DEFAULT_HASH_QUEUE,
  DEFAULT_LOOKUP_RATE_PER_MINUTE,
  DEFAULT_TOMBSTONE_DAYS,
  DEFAULT_HASH_WAIT_MS,
  DEFAULT_QUOTA_POLICY,
  DEFAULT_SOURCE_FAILURES,
  fromBase64url,
  isProtocolVersion,
  isRegistrationMode,
  parseCidrList,
  REGISTRATION_MODES,
  type Cidr,
  type RegistrationMode,
} from '@strongroom/core';
import { DEFAULT_QUEUE_BOUND } from '@strongroom/adapters-sqlite';

/** Everything the server reads from its environment, validated once at start. */
export interface Config {
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  /**
   * `SVC_PG_POOLER`: what sits between the server and PostgreSQL. `none` (default) or `transaction`
   * (PgBouncer's `pool_mode = transaction`): no named statements, settings per transaction, the
   * migration lock held by a transaction. Only with SVC_DATABASE_URL.
   */
  readonly pgPooler: 'none' | 'transaction';
  readonly baseUrl: string;
  readonly sessionIdleMs: number;
  readonly sessionMaxMs: number;
  /** `SVC_REAUTH_WINDOW_S`: how long a proof of a credential lets a session change how the account signs in (default 300). */
  readonly reauthWindowMs: number;
  readonly quotaSoftBytes: number | null;
  readonly quotaHardBytes: number | null;
  readonly quotaGraceMs: number;
  /**
   * `SVC_QUOTA_FOLLOW_UP_S`: how long after an account's trash, restore, purge or trash-empty its
   * provenance and metadata writes are admitted as follow-ups past the limits (default 900).
   */
  readonly quotaFollowUpMs: number;
  /** `SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES`: how far past the hard limit follow-ups may go (default 16 MiB). */
  readonly quotaFollowUpOverdraft: number;
  readonly keyGraceMs: number;
  readonly uploadTtlMs: number;
  /**
   * `SVC_STAGING_SWEEP_S`: how often the server removes staged bytes of upload sessions that are no
   * longer open (default 3600), one process at a time.
   */
  readonly stagingSweepMs: number;
  readonly protocolMin: string;
  readonly protocolMax: string;
  readonly minClientBuild: string;
  /**
   * `SVC_SECRET_KEY`: the 32-byte key sealing TOTP secrets at rest. Null: use (or create) the
   * key file in the data dir.
   */
  readonly secretKey: Uint8Array | null;
  /**
   * The issuer in the TOTP `otpauth://` URI: `SVC_TOTP_ISSUER`, else the host of the base URL
   * without its port. Never holds a colon (authenticator apps split the label there).
   */
  readonly totpIssuer: string;
  /** `SVC_CORS_ORIGINS`: browser origins allowed to call the API (exact `scheme://host[:port]`). */
  readonly corsOrigins: readonly string[];
  /**
   * `SVC_METRICS_TOKEN`: when set, `/metrics` answers only `Authorization: Bearer <this>`; null:
   * open (keep it behind the network boundary).
   */
  readonly metricsToken?: string | null;
  /**
   * Whether SVC_BASE_URL was set (false: derived from HOST and PORT). Only a set base URL is held against
   * the database's recorded token issuer at start; absent counts as set.
   */
  readonly baseUrlConfigured?: boolean;
  /** `SVC_AUTH_LOCAL`: password sign-in (and everything around it) on; false for an OpenID-only deployment. */
  readonly authLocal: boolean;
  /** OpenID Connect sign-in, when `SVC_OIDC_ISSUER` is set. */
  readonly oidc: OidcConfig | null;
  /** `SVC_REGISTRATION`: who may create an account (open, closed, or the allowlist in the database). */
  readonly registration: RegistrationMode;
  /** `SVC_DEPRECATION_NOTICE_S`: the least time between announcing a new Min and its effective instant. */
  readonly deprecationNoticeMs: number;
  /** `SVC_DROP_TTL_S`: how long a finalized web-upload drop waits for adoption (default 7 days). */
  readonly dropTtlMs: number;
  /** `SVC_FEDERATED_BUDGET_PCT`: per (receiver, source peer) federated cache budget, percent of the hard limit (default 25). */
  readonly federatedBudgetPct: number;
  /** `SVC_FEDERATION_PEERS`: base URLs of the peer servers this one trusts (no trailing slash). */
  readonly federationPeers: readonly string[];
  /** `SVC_MAX_OPEN_UPLOADS`: most open upload sessions (every kind, guest drops included) per paying account (default 1,000). */
  readonly maxOpenUploads: number;
  /** `SVC_FEDERATION_RATE`: lookups per minute per peer, and its bucket size (default 600). */
  readonly federationRate: number;
  /** Handle lookups per minute per account, local and forwarded (SVC_LOOKUP_RATE). */
  readonly lookupRate: number;
  /** How long sync keeps removals, and so how old a sync cursor may be, in days (SVC_SYNC_TOMBSTONE_DAYS). */
  readonly syncTombstoneDays: number;
  /** Password checks that may wait for a free hasher before sign-in answers 503 error.server.busy (SVC_HASH_QUEUE). */
  readonly hashQueue: number;
  /** `SVC_SIGNIN_FAILURES_PER_SOURCE`: failed password sign-ins one client address may have per hour before 429 (default 100). */
  readonly signInFailuresPerSource: number;
  /**
   * `SVC_TRUSTED_PROXIES`: CIDRs of the reverse proxies whose X-Forwarded-For is believed (default
   * none: the client address is the socket's peer).
   */
  readonly trustedProxies: readonly Cidr[];
  /** The longest a password check may expect to wait for a hasher before that 503 instead (SVC_HASH_WAIT_MS; 0: no time bound). */
  readonly hashWaitMs: number;
  /**
   * `SVC_WORKERS`: server processes sharing the port (default 1; `auto`: the cores this process may
   * run on). Above 1 a primary process migrates and prepares keys once, then forks them.
   */
  readonly workers: number;
  /** Calls each of the stores' batch queues may hold before a request answers 503 error.server.busy (SVC_STORE_QUEUE). */
  readonly storeQueue: number;
  /** `SVC_FEDERATION_TIMEOUT_S`: how long a request to a peer may take (default 5 s). */
  readonly federationTimeoutMs: number;
  /** `SVC_FEDERATION_REVOKED_CACHE_S`: how long a peer's revoked-jti record is trusted (1 to 60 s, default 60). */
  readonly federationRevokedCacheMs: number;
  /**
   * Scheduled backups: `SVC_BACKUP_DIR` and `SVC_BACKUP_INTERVAL_S` (both, or neither), keeping the
   * newest `SVC_BACKUP_KEEP` (default 7). Null: no schedule (`npm run cli -- backup` still works).
   */
  readonly backup: BackupSchedule | null;
  /** How backups are encrypted and opened (SVC_BACKUP_RECIPIENTS, SVC_BACKUP_PASSPHRASE_FILE, SVC_BACKUP_UNENCRYPTED, SVC_BACKUP_IDENTITY_FILE). */
  readonly backupEncryption: BackupEncryptionConfig;
  /** How the HTTP server treats slow clients and how long it drains at shutdown (see `main.ts`). */
  readonly http: HttpTimeouts;
  /** How long a request waits on PostgreSQL before it fails closed (see `databaseTimeoutsFit`). */
  readonly database: DatabaseTimeouts;
  /** `SVC_BLOB_URL`: where blobs live; the filesystem under the data dir unless it names a bucket. */
  readonly blobStore?: BlobStoreConfig;
}

/** PostgreSQL waits, in milliseconds (env vars in seconds). */
export interface DatabaseTimeouts {
  /** `SVC_DB_STATEMENT_TIMEOUT_S`: one statement, lock waits included, before it is abandoned (default 15 s). */
  readonly statementMs: number;
  /** `SVC_DB_CONNECT_TIMEOUT_S`: waiting for a pooled or new connection (default 5 s). */
  readonly connectMs: number;
}

/**
 * `file` (SVC_BLOB_URL unset or `file://`): blobs under `SVC_DATA_DIR/blobs`. `s3`
 * (`s3://bucket/prefix`): an S3-compatible bucket, credentials from the AWS SDK's standard chain.
 */
export type BlobStoreConfig =
  | { readonly kind: 'file' }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      /** Key prefix inside the bucket, without leading or trailing slash ("" for none). */
      readonly prefix: string;
      /** `SVC_S3_ENDPOINT`: an S3-compatible service's URL; null: AWS for the region. */
      readonly endpoint: string | null;
      /** `SVC_S3_REGION`, else `AWS_REGION`, else us-east-1. */
      readonly region: string;
      /** `SVC_S3_FORCE_PATH_STYLE`: `endpoint/bucket/key` addressing (most self-hosted stores). */
      readonly forcePathStyle: boolean;
      /** `SVC_S3_TIMEOUT_S`: connecting, or a request with no byte moving, fails after this (two attempts). */
      readonly timeoutMs: number;
      /** `SVC_S3_DIRECT`: clients send and fetch bytes with presigned URLs (true), or the server carries them all (false). */
      readonly direct: boolean;
      /** `SVC_S3_PUT_URL_S`: the longest a presigned upload URL lives (default 900), never past its session. */
      readonly putUrlTtlS: number;
      /**
       * `SVC_S3_PART_BYTES`: a direct upload declaring more goes in parts of this size (default 64
       * MiB, within S3's part limits of 5 MiB to 5 GiB).
       */
      readonly partBytes: number;
    };

export interface OidcConfig {
  readonly issuer: string;
  readonly clientId: string;
  /** Null: a public client (PKCE only). */
  readonly clientSecret: string | null;
  /** Exact URIs a flow may send the client back to. */
  readonly returnUris: readonly string[];
  readonly scopes: string;
}

/**
 * Backups are encrypted to the operator with age: to `SVC_BACKUP_RECIPIENTS` (comma-separated
 * X25519 recipients, `age1…`) or to the passphrase in `SVC_BACKUP_PASSPHRASE_FILE` (not both: age
 * cannot mix them); without either, a backup is refused unless `SVC_BACKUP_UNENCRYPTED=1` (and then
 * never holds the secret key). `SVC_BACKUP_IDENTITY_FILE` (an age identity file) opens them for
 * verify-backup and restore. The CLI's flags take precedence over each.
 */
export interface BackupEncryptionConfig {
  readonly recipients: readonly string[];
  readonly passphraseFile: string | null;
  readonly unencrypted: boolean;
  readonly identityFile: string | null;
}

export interface BackupSchedule {
  readonly dir: string;
  readonly intervalMs: number;
  readonly keep: number;
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

/**
 * A request caught in a database partition must get its problem (401/503 error.auth.unavailable)
 * before any socket timeout closes the connection under it, or the client sees only "other side
 * closed" and cannot tell a dead server from a sick database. The longest a request waits on one
 * database call is a connection wait plus a statement; that must end before the socket idle
 * timeout (no byte moves while the handler waits) and the request timeout (a handler may wait on
 * the database before it reads the whole body). The headers and keep-alive timeouts never run
 * while a handler does. Equal is refused too: both timers would fire together, a race. Checked on
 * PostgreSQL only (`SVC_DATABASE_URL`).
 */
function databaseTimeoutsFit(db: DatabaseTimeouts, http: HttpTimeouts): void {
  const wait = db.connectMs + db.statementMs;
  for (const [name, ms] of [
    ['SVC_IDLE_TIMEOUT_S', http.idleMs],
    ['SVC_REQUEST_TIMEOUT_S', http.requestMs],
  ] as const) {
    if (wait >= ms) {
      throw new ConfigError(
        `SVC_DB_CONNECT_TIMEOUT_S + SVC_DB_STATEMENT_TIMEOUT_S (${db.connectMs / 1000} + ${db.statementMs / 1000} s) must be shorter than ${name} (${ms / 1000} s), ` +
          'or a request caught in a database partition loses its connection instead of receiving its error',
      );
    }
  }
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
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new ConfigError(`${name} must be a whole number of bytes, or empty for unlimited, got "${raw}"`);
  return Number(raw);
}

function secretKey(env: Record<string, string | undefined>): Uint8Array | null {
  const raw = env.SVC_SECRET_KEY;
  if (raw === undefined || raw === '') return null;
  const key = fromBase64url(raw.trim());
  // Never echo the value: it is a secret even when malformed.
  if (key === null || key.length !== 32)
    throw new ConfigError('SVC_SECRET_KEY must be 32 bytes as unpadded base64url (43 characters)');
  return key;
}

function positiveCount(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw)))
    throw new ConfigError(`${name} must be a whole number >= 1, got "${raw}"`);
  return Number(raw);
}

function trustedProxies(env: Record<string, string | undefined>): Cidr[] {
  const { cidrs, malformed } = parseCidrList(env.SVC_TRUSTED_PROXIES ?? '');
  if (malformed.length > 0)
    throw new ConfigError(`SVC_TRUSTED_PROXIES must list CIDRs such as 10.0.0.0/8 or fd00::/8, got "${malformed[0]}"`);
  return cidrs;
}

function metricsToken(env: Record<string, string | undefined>): string | null {
  const raw = env.SVC_METRICS_TOKEN;
  if (raw === undefined || raw === '') return null;
  // Never echo the value. Short tokens can be guessed; a scraper's config holds it anyway.
  if (raw.length < 16 || /[\s,]/.test(raw))
    throw new ConfigError('SVC_METRICS_TOKEN must be at least 16 characters, without spaces or commas');
  return raw;
}

function percent(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 100)
    throw new ConfigError(`${name} must be a whole number of percent from 0 to 100, got "${raw}"`);
  return Number(raw);
}

function version(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name] ?? fallback;
  if (!isProtocolVersion(raw)) throw new ConfigError(`${name} must be a calendar date YYYY-MM-DD, got "${raw}"`);
  return raw;
}

function totpIssuer(env: Record<string, string | undefined>, baseUrl: string): string {
  const raw = env.SVC_TOTP_ISSUER;
  if (raw !== undefined && raw !== '') {
    const issuer = raw.trim();
    if (issuer === '' || issuer.includes(':') || /\p{Cc}/u.test(issuer))
      throw new ConfigError(`SVC_TOTP_ISSUER must be a name without colons or control characters, got "${raw}"`);
    return issuer;
  }
  const host = new URL(baseUrl).hostname;
  // An IPv6 literal keeps its colons even without a port: the operator has to name the issuer.
  if (host.includes(':')) throw new ConfigError('SVC_TOTP_ISSUER must be set when SVC_BASE_URL names an IPv6 address');
  return host;
}

function corsOrigins(env: Record<string, string | undefined>): string[] {
  const raw = env.SVC_CORS_ORIGINS ?? '';
  const origins = raw
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of origins) {
    // An origin is exactly scheme://host[:port], as browsers send it: no path, no trailing slash.
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      /* reported below */
    }
    if (parsed === null || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(
        `SVC_CORS_ORIGINS must be comma-separated origins such as https://app.example.org, got "${origin}"`,
      );
    }
  }
  return origins;
}

function authLocal(env: Record<string, string | undefined>): boolean {
  const raw = env.SVC_AUTH_LOCAL;
  if (raw === undefined || raw === '' || raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`SVC_AUTH_LOCAL must be true or false, got "${raw}"`);
}

function registration(env: Record<string, string | undefined>): RegistrationMode {
  const raw = env.SVC_REGISTRATION;
  if (raw === undefined || raw === '') return 'open';
  if (isRegistrationMode(raw)) return raw;
  throw new ConfigError(`SVC_REGISTRATION must be ${REGISTRATION_MODES.join(', ')}, got "${raw}"`);
}

/** A return URI: an absolute https URL, a loopback http URL, or an app's own scheme (RFC 8252). */
function returnUri(raw: string): boolean {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return false;
  }
  if (u.hash !== '') return false;
  if (u.protocol === 'https:') return true;
  if (u.protocol === 'http:') return u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]';
  // A private-use scheme: reverse domain name style, never a web or script scheme.
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(u.protocol);
}

function oidc(env: Record<string, string | undefined>): OidcConfig | null {
  const issuer = env.SVC_OIDC_ISSUER;
  if (issuer === undefined || issuer === '') return null;
  let u: URL | null = null;
  try {
    u = new URL(issuer);
  } catch {
    u = null;
  }
  const loopback =
    u !== null &&
    u.protocol === 'http:' &&
    (u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]');
  if (u === null || (u.protocol !== 'https:' && !loopback) || u.search !== '' || u.hash !== '') {
    throw new ConfigError(`SVC_OIDC_ISSUER must be an https URL (http only on loopback), got "${issuer}"`);
  }
  const clientId = env.SVC_OIDC_CLIENT_ID;
  if (clientId === undefined || clientId.trim() === '')
    throw new ConfigError('SVC_OIDC_CLIENT_ID must be set when SVC_OIDC_ISSUER is');
  const returnUris = (env.SVC_OIDC_RETURN_URIS ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (returnUris.length === 0)
    throw new ConfigError('SVC_OIDC_RETURN_URIS must list at least one return URI when SVC_OIDC_ISSUER is set');
  for (const r of returnUris) {
    if (!returnUri(r))
      throw new ConfigError(`SVC_OIDC_RETURN_URIS holds "${r}", which is neither an https URL nor an app scheme URI`);
  }
  const scopes = (env.SVC_OIDC_SCOPES ?? 'openid email profile')
    .trim()
    .split(/\s+/)
    .filter((x) => x !== '');
  if (!scopes.includes('openid')) throw new ConfigError('SVC_OIDC_SCOPES must include openid');
  return {
    issuer,
    clientId: clientId.trim(),
    // Never echoed: a secret.
    clientSecret: env.SVC_OIDC_CLIENT_SECRET ? env.SVC_OIDC_CLIENT_SECRET : null,
    returnUris,
    scopes: scopes.join(' '),
  };
}

function federationPeers(env: Record<string, string | undefined>, baseUrl: string): string[] {
  const raw = env.SVC_FEDERATION_PEERS ?? '';
  const peers = raw
    .split(',')
    .map((p) => p.trim().replace(/\/+$/, ''))
    .filter((p) => p !== '');
  for (const peer of peers) {
    if (!v.is(v.pipe(v.string(), v.url()), peer) || !/^https?:\/\/[^/?#]+$/.test(peer)) {
      throw new ConfigError(`SVC_FEDERATION_PEERS must list http(s) base URLs without a path, got "${peer}"`);
    }
    if (peer === baseUrl) throw new ConfigError('SVC_FEDERATION_PEERS must not list this server itself (SVC_BASE_URL)');
  }
  return [...new Set(peers)];
}

function wholeNumber(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return Number(raw);
}

/** `age1` and 58 bech32 characters: an age X25519 recipient (its checksum is checked when a backup encrypts to it). */
const AGE_RECIPIENT = /^age1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}$/;

function backupEncryption(env: Record<string, string | undefined>): BackupEncryptionConfig {
  const recipients = (env.SVC_BACKUP_RECIPIENTS ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  for (const r of recipients) {
    if (!AGE_RECIPIENT.test(r))
      throw new ConfigError(
        `SVC_BACKUP_RECIPIENTS must list age X25519 recipients (age1…, as age-keygen -y or \`npm run cli -- backup-keygen\` prints), got "${r.slice(0, 80)}"`,
      );
  }
  const unencryptedRaw = env.SVC_BACKUP_UNENCRYPTED ?? '';
  if (unencryptedRaw !== '' && unencryptedRaw !== '0' && unencryptedRaw !== '1')
    throw new ConfigError(`SVC_BACKUP_UNENCRYPTED must be 1 or 0, got "${unencryptedRaw}"`);
  const unencrypted = unencryptedRaw === '1';
  const passphraseFile = env.SVC_BACKUP_PASSPHRASE_FILE || null;
  if (recipients.length > 0 && passphraseFile !== null)
    throw new ConfigError(
      'SVC_BACKUP_RECIPIENTS and SVC_BACKUP_PASSPHRASE_FILE exclude each other (age encrypts to recipients or to one passphrase)',
    );
  if (unencrypted && (recipients.length > 0 || passphraseFile !== null))
    throw new ConfigError('SVC_BACKUP_UNENCRYPTED=1 contradicts SVC_BACKUP_RECIPIENTS / SVC_BACKUP_PASSPHRASE_FILE');
  return { recipients, passphraseFile, unencrypted, identityFile: env.SVC_BACKUP_IDENTITY_FILE || null };
}

function backupSchedule(env: Record<string, string | undefined>): BackupSchedule | null {
  const dir = env.SVC_BACKUP_DIR ?? '';
  const interval = env.SVC_BACKUP_INTERVAL_S ?? '';
  if (dir === '' && interval === '') {
    if (env.SVC_BACKUP_KEEP) throw new ConfigError('SVC_BACKUP_KEEP needs SVC_BACKUP_DIR and SVC_BACKUP_INTERVAL_S');
    return null;
  }
  if (dir === '') throw new ConfigError('SVC_BACKUP_INTERVAL_S needs SVC_BACKUP_DIR (where the backups go)');
  if (interval === '') throw new ConfigError('SVC_BACKUP_DIR needs SVC_BACKUP_INTERVAL_S (how often to take one)');
  const sealing = backupEncryption(env);
  // A scheduled backup is refused at start as `backup` would refuse it, not found missing later.
  if (sealing.recipients.length === 0 && sealing.passphraseFile === null && !sealing.unencrypted) {
    throw new ConfigError(
      'SVC_BACKUP_RECIPIENTS is not set: scheduled backups (SVC_BACKUP_DIR) are encrypted to the operator; set it (age1…), or SVC_BACKUP_PASSPHRASE_FILE, or SVC_BACKUP_UNENCRYPTED=1 for backups without the secret key',
    );
  }
  // A run still going when the next is due makes that one wait (the lock), never run twice.
  return {
    dir,
    intervalMs: seconds(env, 'SVC_BACKUP_INTERVAL_S', 0, 1),
    keep: wholeNumber(env, 'SVC_BACKUP_KEEP', 7, 1, 10_000),
  };
}

const S3_VARS = [
  'SVC_S3_ENDPOINT',
  'SVC_S3_REGION',
  'SVC_S3_FORCE_PATH_STYLE',
  'SVC_S3_TIMEOUT_S',
  'SVC_S3_DIRECT',
  'SVC_S3_PUT_URL_S',
  'SVC_S3_PART_BYTES',
] as const;

function blobStore(env: Record<string, string | undefined>): BlobStoreConfig {
  const raw = (env.SVC_BLOB_URL ?? '').trim();
  if (raw === '' || raw === 'file://' || raw === 'file:') {
    // A bucket setting without a bucket is a mistake that would otherwise store blobs on local disk unnoticed.
    const stray = S3_VARS.filter((n) => (env[n] ?? '') !== '');
    if (stray.length > 0) throw new ConfigError(`${stray.join(', ')} only apply with SVC_BLOB_URL=s3://bucket/prefix`);
    return { kind: 'file' };
  }
  const m = /^s3:\/\/([^/?#]+)(\/[^?#]*)?$/.exec(raw);
  // Bucket names as S3 allows them: 3 to 63 lowercase letters, digits, dots and hyphens.
  if (m === null || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(m[1]!)) {
    throw new ConfigError(
      `SVC_BLOB_URL must be file:// (blobs under SVC_DATA_DIR) or s3://bucket/prefix, got "${raw}"`,
    );
  }
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..') || prefix.includes('//'))
    throw new ConfigError(`SVC_BLOB_URL's prefix must be a plain key path, got "${prefix}"`);
  const endpoint = (env.SVC_S3_ENDPOINT ?? '').trim().replace(/\/+$/, '');
  if (endpoint !== '' && (!v.is(v.pipe(v.string(), v.url()), endpoint) || !/^https?:\/\/[^/?#]+$/.test(endpoint))) {
    throw new ConfigError(`SVC_S3_ENDPOINT must be an http(s) URL without a path, got "${endpoint}"`);
  }
  const region = (env.SVC_S3_REGION || env.AWS_REGION || 'us-east-1').trim();
  if (!/^[a-z0-9-]{1,64}$/.test(region))
    throw new ConfigError(`SVC_S3_REGION must be a region name such as eu-west-1 (or auto), got "${region}"`);
  const pathStyle = env.SVC_S3_FORCE_PATH_STYLE ?? '';
  if (pathStyle !== '' && pathStyle !== 'true' && pathStyle !== 'false')
    throw new ConfigError(`SVC_S3_FORCE_PATH_STYLE must be true or false, got "${pathStyle}"`);
  const direct = env.SVC_S3_DIRECT ?? '';
  if (direct !== '' && direct !== 'true' && direct !== 'false')
    throw new ConfigError(`SVC_S3_DIRECT must be true or false, got "${direct}"`);
  return {
    kind: 's3',
    bucket: m[1]!,
    prefix,
    endpoint: endpoint === '' ? null : endpoint,
    region,
    forcePathStyle: pathStyle === 'true',
    timeoutMs: wholeNumber(env, 'SVC_S3_TIMEOUT_S', 10, 1, 300) * 1000,
    direct: direct !== 'false',
    // S3 signs URLs for at most seven days.
    putUrlTtlS: wholeNumber(env, 'SVC_S3_PUT_URL_S', DEFAULT_DIRECT_PUT_TTL_S, 1, 604_800),
    partBytes: wholeNumber(env, 'SVC_S3_PART_BYTES', DEFAULT_PART_BYTES, MIN_PART_BYTES, MAX_PART_BYTES),
  };
}

/** Reads and checks the configuration; throws ConfigError naming the variable on any bad value. */
/**
 * Without SVC_BASE_URL the server is reached where it listens: HOST (default 127.0.0.1, as main.ts
 * binds), so tokens' issuer and the authenticator apps' label name that address. A wildcard address
 * names no host to reach, so loopback stands for it.
 */
export function defaultBaseUrl(host: string | undefined, port: number): string {
  const h = host === undefined || host.trim() === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.trim();
  return `http://${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${port}`;
}

export function readConfig(env: Record<string, string | undefined> = process.env): Config {
  const portRaw = env.PORT ?? '8080';
  if (!/^\d+$/.test(portRaw) || Number(portRaw) > 65535)
    throw new ConfigError(`PORT must be a port number, got "${portRaw}"`);
  const port = Number(portRaw);
  const baseUrl = env.SVC_BASE_URL ?? defaultBaseUrl(env.HOST, port);
  if (!v.is(v.pipe(v.string(), v.url()), baseUrl) || !/^https?:\/\//.test(baseUrl))
    throw new ConfigError(`SVC_BASE_URL must be an http(s) URL, got "${baseUrl}"`);
  const databaseUrl = env.SVC_DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError('SVC_DATABASE_URL must be a postgres:// URL');
  const pgPooler = env.SVC_PG_POOLER || 'none';
  if (pgPooler !== 'none' && pgPooler !== 'transaction')
    throw new ConfigError(`SVC_PG_POOLER must be "none" or "transaction", got "${pgPooler}"`);
  // A pooler in front of SQLite is a mistake in the settings, not something to ignore.
  if (pgPooler !== 'none' && databaseUrl === null)
    throw new ConfigError('SVC_PG_POOLER needs SVC_DATABASE_URL (a pooler stands in front of PostgreSQL)');
  const hardLimit = bytes(env, 'SVC_QUOTA_HARD_BYTES', 10 * 1024 ** 3);
  // Unset, the soft limit follows the hard one (80 %), so setting only the hard limit just works.
  const softLimit =
    env.SVC_QUOTA_SOFT_BYTES === undefined
      ? hardLimit === null
        ? null
        : Math.floor(hardLimit * 0.8)
      : bytes(env, 'SVC_QUOTA_SOFT_BYTES', null);
  const config: Config = {
    port,
    dataDir: env.SVC_DATA_DIR || './data',
    databaseUrl,
    pgPooler,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    sessionIdleMs: seconds(env, 'SVC_SESSION_IDLE_S', 180 * DAY_S),
    sessionMaxMs: seconds(env, 'SVC_SESSION_MAX_S', 365 * DAY_S),
    reauthWindowMs: seconds(env, 'SVC_REAUTH_WINDOW_S', 300),
    quotaSoftBytes: softLimit,
    quotaHardBytes: hardLimit,
    quotaGraceMs: seconds(env, 'SVC_QUOTA_GRACE_S', 14 * DAY_S),
    quotaFollowUpMs: seconds(env, 'SVC_QUOTA_FOLLOW_UP_S', DEFAULT_QUOTA_POLICY.followUpMs / 1000, 0),
    quotaFollowUpOverdraft: wholeNumber(
      env,
      'SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES',
      DEFAULT_QUOTA_POLICY.followUpOverdraft,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    // Never shorter than an access token's fifteen minutes, or a retired key would strand live tokens.
    keyGraceMs: seconds(env, 'SVC_KEY_GRACE_S', DAY_S, 900),
    uploadTtlMs: seconds(env, 'SVC_UPLOAD_TTL_S', DAY_S),
    stagingSweepMs: seconds(env, 'SVC_STAGING_SWEEP_S', 3600),
    protocolMin: version(env, 'SVC_PROTOCOL_MIN', '2026-03-01'),
    protocolMax: version(env, 'SVC_PROTOCOL_MAX', '2026-11-01'),
    minClientBuild: env.SVC_MIN_CLIENT_BUILD ?? '1',
    secretKey: secretKey(env),
    totpIssuer: totpIssuer(env, baseUrl),
    corsOrigins: corsOrigins(env),
    metricsToken: metricsToken(env),
    baseUrlConfigured: env.SVC_BASE_URL !== undefined,
    authLocal: authLocal(env),
    oidc: oidc(env),
    registration: registration(env),
    deprecationNoticeMs: seconds(env, 'SVC_DEPRECATION_NOTICE_S', 90 * DAY_S),
    dropTtlMs: seconds(env, 'SVC_DROP_TTL_S', 7 * DAY_S),
    federatedBudgetPct: percent(env, 'SVC_FEDERATED_BUDGET_PCT', 25),
    federationPeers: federationPeers(env, baseUrl.replace(/\/+$/, '')),
    maxOpenUploads: positiveCount(env, 'SVC_MAX_OPEN_UPLOADS', DEFAULT_QUOTA_POLICY.maxOpenUploads),
    federationRate: wholeNumber(env, 'SVC_FEDERATION_RATE', 600, 1, 1_000_000),
    lookupRate: wholeNumber(env, 'SVC_LOOKUP_RATE', DEFAULT_LOOKUP_RATE_PER_MINUTE, 1, 1_000_000),
    syncTombstoneDays: wholeNumber(env, 'SVC_SYNC_TOMBSTONE_DAYS', DEFAULT_TOMBSTONE_DAYS, 1, 36_500),
    hashQueue: wholeNumber(env, 'SVC_HASH_QUEUE', DEFAULT_HASH_QUEUE, 0, 1_000_000),
    signInFailuresPerSource: positiveCount(env, 'SVC_SIGNIN_FAILURES_PER_SOURCE', DEFAULT_SOURCE_FAILURES),
    trustedProxies: trustedProxies(env),
    hashWaitMs: wholeNumber(env, 'SVC_HASH_WAIT_MS', DEFAULT_HASH_WAIT_MS, 0, 600_000),
    workers: env.SVC_WORKERS === 'auto' ? availableParallelism() : wholeNumber(env, 'SVC_WORKERS', 1, 1, 256),
    storeQueue: wholeNumber(env, 'SVC_STORE_QUEUE', DEFAULT_QUEUE_BOUND, 1, 1_000_000),
    federationTimeoutMs: wholeNumber(env, 'SVC_FEDERATION_TIMEOUT_S', 5, 1, 300) * 1000,
    federationRevokedCacheMs: wholeNumber(env, 'SVC_FEDERATION_REVOKED_CACHE_S', 60, 1, 60) * 1000,
    backup: backupSchedule(env),
    backupEncryption: backupEncryption(env),
    blobStore: blobStore(env),
    http: {
      headersMs: seconds(env, 'SVC_HEADERS_TIMEOUT_S', 10),
      requestMs: seconds(env, 'SVC_REQUEST_TIMEOUT_S', 300),
      idleMs: seconds(env, 'SVC_IDLE_TIMEOUT_S', 30),
      keepAliveMs: seconds(env, 'SVC_KEEPALIVE_TIMEOUT_S', 5),
      shutdownGraceMs: seconds(env, 'SVC_SHUTDOWN_GRACE_S', 10),
    },
    database: {
      statementMs: seconds(env, 'SVC_DB_STATEMENT_TIMEOUT_S', 15),
      connectMs: seconds(env, 'SVC_DB_CONNECT_TIMEOUT_S', 5),
    },
  };
  if (config.http.headersMs > config.http.requestMs)
    throw new ConfigError('SVC_HEADERS_TIMEOUT_S must not exceed SVC_REQUEST_TIMEOUT_S');
  // SQLite is a file in this process: no network to partition, and neither wait applies.
  if (config.databaseUrl !== null) databaseTimeoutsFit(config.database, config.http);
  if (config.protocolMin > config.protocolMax)
    throw new ConfigError('SVC_PROTOCOL_MIN must not be after SVC_PROTOCOL_MAX');
  if (
    config.quotaSoftBytes !== null &&
    config.quotaHardBytes !== null &&
    config.quotaSoftBytes > config.quotaHardBytes
  ) {
    throw new ConfigError('SVC_QUOTA_SOFT_BYTES must not exceed SVC_QUOTA_HARD_BYTES');
  }
  return config;
}
