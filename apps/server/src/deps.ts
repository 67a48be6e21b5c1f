import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import {
  AccountService,
  BoundedHasher,
  AccessTokens,
  AlbumService,
  DeviceDirectoryService,
  RevokeAllService,
  UpgradeService,
  type WriteGuard,
  KeyRing,
  SessionService,
  TotpService,
  type Clock,
  type Ed25519Signer,
  type Logger,
  type PasswordHasher,
  type ProtocolWindow,
  type Random,
  AssetService,
  BlobReadService,
  QuotaService,
  UploadService,
  ResumableUploads,
  type BlobStore,
  type Ports,
  DEFAULT_QUOTA_POLICY,
  DEFAULT_SESSION_POLICY,
  SignInMethodsService,
  TotpRecoveryService,
  OidcService,
  TotpSecretBox,
  SyncService,
  type IdentityProvider,
  AttestationRing,
  DeprecationService,
  LinkService,
  SponsorshipService,
  AccountDeletionService,
  DiscoveryService,
  FederationService,
  type PeerDirectory,
  type PeerLookup,
  RegistrationGate,
  OperatorService,
} from '@strongroom/core';
import {
  Argon2Hasher,
  HttpPeers,
  JsonLogger,
  cryptoRandom,
  systemClock,
  OidcRelyingParty,
  platformEd25519Signer,
  NodeSecretBox,
} from '@strongroom/adapters-node';
import { createSqlitePorts, groupCommitOf, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts, openPgDatabase } from '@strongroom/adapters-pg';
import { ConfigError, type Config } from './config.js';
import { CLOSE_SESSIONS_MARKER, RESTORE_MARKER } from './backup/files.js';
import { openBlobStore } from './blob-store.js';
import { loadOrCreateSecretKey } from './secret-key.js';
import { HttpMetrics } from './http/metrics.js';
import { checkDeployment } from './deployment-check.js';
import { LiveProtocol } from './http/protocol-state.js';

/** The stores one deployment runs on: the database's port set, the blob store, and how to close them. */
export interface Stores extends Ports {
  /** Content-addressed ciphertext (the filesystem under the data dir). */
  readonly blobs: BlobStore;
  /** Releases connections and file handles. */
  close(): Promise<void>;
  /**
   * Set when a durable write failed in a way that leaves the process unsure of what reached the
   * disk (SQLite: a failed WAL fsync). The server then refuses everything and exits non-zero.
   */
  readonly durability?: DurabilityWatch;
}

export interface DurabilityWatch {
  /** The failure, or null while writes are durable. */
  lost(): unknown;
  onLost(listener: (error: unknown) => void): void;
}

/** Everything the HTTP layer needs: configuration, the platform ports and the core services. */
export interface AppDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly window: ProtocolWindow;
  readonly stores: Stores;
  readonly keyRing: KeyRing;
  readonly tokens: AccessTokens;
  readonly sessions: SessionService;
  readonly accounts: AccountService;
  /** The one bounded queue in front of every password hash and check: its load, for tests and metrics. */
  readonly passwordChecks: Pick<BoundedHasher, 'load'>;
  readonly totp: TotpService;
  readonly devices: DeviceDirectoryService;
  readonly revokeAll: RevokeAllService;
  readonly albums: AlbumService;
  readonly upgrades: UpgradeService;
  /** Device, album, pin and quiescence checks every writing operation passes first. */
  readonly writeGuard: WriteGuard;
  readonly quota: QuotaService;
  readonly uploads: UploadService;
  /** Resumable (tus) uploads' offsets: HEAD and PATCH on upload sessions. */
  readonly resumable: ResumableUploads;
  readonly assets: AssetService;
  /** Prometheus metrics of this app (requests, latency, sign-ins, refusals, database errors). */
  readonly metrics: HttpMetrics;
  /** Second-factor recovery through the identity anchor. */
  readonly totpRecovery: TotpRecoveryService;
  /** OpenID Connect sign-in; null when no provider is configured. */
  readonly oidc: OidcService | null;
  /** Who may create an account (SVC_REGISTRATION) and the allowlist the operator edits. */
  readonly registration: RegistrationGate;
  /** The operator's view: every account, ending an account's sessions, lock, the deployment's totals. */
  readonly operator: OperatorService;
  /** Every way into an account (GET /v1/auth/methods). */
  readonly signInMethods: SignInMethodsService;
  /** Deprecation announcements (the operator's `deprecate`) and the window they make at each instant. */
  readonly deprecations: DeprecationService;
  readonly protocol: LiveProtocol;
  /** Storage-attestation keys, their history, and finalize receipts. */
  readonly attestation: AttestationRing;
  /** Sponsored accounts, and who may act as them (X-Svc-Act-As). */
  readonly sponsorship: SponsorshipService;
  /** Share and upload links and guest drops. */
  readonly links: LinkService;
  /** Reading blobs back: who may, and the bytes (GET /v1/blobs, GET /v1/links/{id}/blobs). */
  readonly blobReads: BlobReadService;
  /** Handles, the opt-in public record and lookups of local accounts. */
  readonly discovery: DiscoveryService;
  /** Library sync, the album listing, asset views and what a share link covers. */
  readonly sync: SyncService;
  /** Capability tokens between servers, forwarded lookups and the per-peer limit. */
  readonly federation: FederationService;
  /** Deleting an account: the account's own request and the operator's command, one operation. */
  readonly deletion: AccountDeletionService;
}

export interface Platform {
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly hasher: PasswordHasher;
  /** Access-token signatures; libsodium's Ed25519 (node:crypto where it will not load) unless a test brings another. */
  readonly signer?: Ed25519Signer;
  /** Replaces the OpenID relying party built from the configuration (tests). */
  readonly identityProvider?: IdentityProvider;
  /** Peers' public records and forwarded lookups; HTTP on fetch unless a test supplies its own. */
  readonly peers?: PeerDirectory & PeerLookup;
}

/** `logFields`: what every log line carries (a worker process's number, see workers.ts). */
export const nodePlatform = (logFields?: Record<string, string | number>): Platform => ({
  clock: systemClock,
  random: cryptoRandom,
  logger: new JsonLogger(undefined, { fields: logFields }),
  hasher: new Argon2Hasher(),
  signer: platformEd25519Signer(),
});

/** Whether opening may create a deployment where there is none (the server, `init`), or needs one (every other operator command). */
export interface OpenOptions {
  /**
   * False: an existing deployment only. No data directory is made, no database created or schema
   * applied to an empty one (NoDeploymentError), no key file written. Default true.
   */
  readonly create?: boolean;
  /** `close-restored-sessions`: opens the stores beside the marker a PostgreSQL restore leaves, to do what it waits for. */
  readonly closingRestoredSessions?: boolean;
  /** PostgreSQL: an idle pooled connection the database ended (the server logs it). */
  readonly onConnectionError?: (error: Error) => void;
}

/** Opens the configured database (SQLite under the data dir by default), migrating it forward. */
export async function openStores(config: Config, options: OpenOptions = {}): Promise<Stores> {
  const create = options.create ?? true;
  // A restore that did not finish (killed, disk full) left a directory without a whole database:
  // starting on it would create an empty one beside the restored key and blobs.
  if (existsSync(join(config.dataDir, RESTORE_MARKER))) {
    throw new ConfigError(
      `${join(config.dataDir, RESTORE_MARKER)}: a restore into SVC_DATA_DIR did not finish; empty the directory and run \`npm run cli -- restore\` again`,
    );
  }
  // A restored PostgreSQL deployment whose sessions are still as backed up: revoked ones would work again.
  if (!(options.closingRestoredSessions ?? false) && existsSync(join(config.dataDir, CLOSE_SESSIONS_MARKER))) {
    throw new ConfigError(
      `${join(config.dataDir, CLOSE_SESSIONS_MARKER)}: a restore is not finished; after pg_restore, run \`npm run cli -- close-restored-sessions\` (it closes the sessions of the deployment as backed up)`,
    );
  }
  // Created for the server's user only: the database, the secret key and the blobs live here.
  // The server's start (checkDataDir) narrows an existing directory to 0700 as well; the CLI opens what is there.
  if (create) mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // Without `create`, the SQLite database is looked for before anything else is opened.
  const sqlite =
    config.databaseUrl === null ? openSqliteDatabase(join(config.dataDir, 'strongroom.db'), { create }) : null;
  let opened;
  try {
    opened = await openBlobStore(config);
  } catch (err) {
    sqlite?.close();
    throw err;
  }
  const { blobs, close: closeBlobs } = opened;
  if (sqlite === null) {
    // Several stateless processes may share this database; every port call goes to it (no cache).
    let pg;
    try {
      pg = await openPgDatabase(config.databaseUrl!, {
        queryTimeoutMs: config.database.statementMs,
        connectTimeoutMs: config.database.connectMs,
        create,
        pooler: config.pgPooler,
        ...(options.onConnectionError ? { onConnectionError: options.onConnectionError } : {}),
      });
    } catch (err) {
      closeBlobs();
      throw err;
    }
    return {
      ...createPgPorts(pg.db, { queueBound: config.storeQueue }),
      blobs,
      close: async () => {
        closeBlobs();
        await pg.close();
      },
    };
  }
  const db = sqlite;
  const commits = groupCommitOf(db);
  const durability: DurabilityWatch = { lost: () => commits.broken, onLost: (listener) => commits.onBroken(listener) };
  return {
    ...createSqlitePorts(db, { queueBound: config.storeQueue }),
    blobs,
    durability,
    close: async () => {
      closeBlobs();
      db.close();
    },
  };
}

/** The key file under the data dir, created on first start (when `create`); its path is logged, never the key. */
function secretKeyFromDataDir(dataDir: string, logger: Logger, create: boolean): Uint8Array {
  const { key, created, path } = loadOrCreateSecretKey(dataDir, { create });
  if (created) logger.info('secret_key.created', { path });
  return key;
}

/** Wires the core services over a set of stores. */
export async function buildDeps(
  config: Config,
  stores: Stores,
  platform: Platform,
  options: { adoptBaseUrl?: boolean } & OpenOptions = {},
): Promise<AppDeps> {
  const { clock, random, logger } = platform;
  // One bounded queue in front of every password hash and check: past it, sign-in sheds load. The
  // cores are shared among the worker processes, so each runs its share of hashes at once.
  const hasher = new BoundedHasher(platform.hasher, {
    running: Math.max(1, Math.floor(availableParallelism() / config.workers)),
    waiting: config.hashQueue,
    maxWaitMs: config.hashWaitMs,
    clock,
  });
  // Before anything else: a process configured unlike the others on this database stops here.
  const secretKey = config.secretKey ?? secretKeyFromDataDir(config.dataDir, logger, options.create ?? true);
  await checkDeployment(stores.deployment, {
    secretKey,
    issuer: config.baseUrl,
    issuerConfigured: config.baseUrlConfigured ?? true,
    now: clock.now(),
    logger,
    keySource: config.secretKey ? 'from SVC_SECRET_KEY' : `from ${config.dataDir}/secret.key, SVC_SECRET_KEY unset`,
    adoptIssuer: options.adoptBaseUrl ?? false,
  });
  // Private keys at rest are sealed under the server key, like TOTP secrets: a copy of the database alone signs nothing.
  const keyBox = new NodeSecretBox({ key: secretKey, random });
  const keyRing = new KeyRing({ store: stores.accounts, clock, random, graceMs: config.keyGraceMs, box: keyBox });
  await keyRing.init();
  const tokens = new AccessTokens({
    keyRing,
    clock,
    random,
    issuer: config.baseUrl,
    signer: platform.signer ?? platformEd25519Signer(),
  });
  const sessions = new SessionService({
    ledger: stores.accounts,
    cohorts: stores.accounts,
    tokens,
    clock,
    random,
    logger,
    policy: {
      ...DEFAULT_SESSION_POLICY,
      idleMs: config.sessionIdleMs,
      maxMs: config.sessionMaxMs,
      reauthWindowMs: config.reauthWindowMs,
    },
    tickets: stores.signIn,
  });
  const totp = new TotpService({
    store: stores.totp,
    accounts: stores.accounts,
    sessions,
    clock,
    random,
    logger,
    secretKey,
    issuer: config.totpIssuer,
    throttle: stores.secondFactor,
  });
  const registration = new RegistrationGate({ mode: config.registration, allowlist: stores.registration, clock });
  const accounts = new AccountService({
    accounts: stores.accounts,
    sessions,
    hasher,
    clock,
    random,
    loginGate: totp,
    registration,
    signIn: stores.signIn,
    sourceFailureLimit: config.signInFailuresPerSource,
  });
  // Deprecations and attestation: the window is live (its Min follows announcements as time
  // passes), so every service reporting the supported range reads it through `protocol`.
  const deprecations = new DeprecationService({
    store: stores.deprecations,
    clock,
    logger,
    policy: { build: { min: config.protocolMin, max: config.protocolMax }, noticeMs: config.deprecationNoticeMs },
  });
  await deprecations.refresh();
  const protocol = new LiveProtocol(deprecations, config.minClientBuild);
  await protocol.at(clock.now());
  const window: ProtocolWindow = {
    get min() {
      return protocol.window.min;
    },
    max: config.protocolMax,
  };
  const attestation = new AttestationRing({
    store: stores.attestation,
    blobs: stores.quota,
    clock,
    random,
    issuer: config.baseUrl,
    box: keyBox,
  });
  await attestation.init();
  const devices = new DeviceDirectoryService({ directories: stores.devices, clock, sessions });
  const revokeAll = new RevokeAllService({
    challenges: stores.devices,
    directories: stores.devices,
    sessions,
    clock,
    random,
  });
  const albums = new AlbumService({ albums: stores.albums, directories: stores.devices, clock, random, window });
  const quota = new QuotaService({
    ledger: stores.quota,
    blobs: stores.blobs,
    clock,
    random,
    policy: {
      ...DEFAULT_QUOTA_POLICY,
      defaults: { soft: config.quotaSoftBytes, hard: config.quotaHardBytes },
      graceMs: config.quotaGraceMs,
      federatedShare: config.federatedBudgetPct / 100,
      maxOpenUploads: config.maxOpenUploads,
      followUpMs: config.quotaFollowUpMs,
      followUpOverdraft: config.quotaFollowUpOverdraft,
    },
  });
  const uploads = new UploadService({
    sessions: stores.quota,
    assets: stores.quota,
    blobs: stores.blobs,
    quota,
    writeGuard: albums.writeGuard,
    clock,
    random,
    ttlMs: config.uploadTtlMs,
    dropTtlMs: config.dropTtlMs,
    federationPeers: config.federationPeers,
    ...(config.blobStore?.kind === 's3'
      ? { directPutTtlS: config.blobStore.putUrlTtlS, partBytes: config.blobStore.partBytes }
      : {}),
  });
  const resumable = new ResumableUploads({
    sessions: stores.quota,
    segments: stores.segments,
    blobs: stores.blobs,
    writeGuard: albums.writeGuard,
    clock,
    random,
  });
  const assets = new AssetService({
    assets: stores.quota,
    quota,
    sessions: stores.quota,
    writeGuard: albums.writeGuard,
    clock,
  });
  // Sponsored accounts, links and drops (one block); federated fills are upload sessions.
  const sponsorship = new SponsorshipService({
    store: stores.sponsorship,
    accounts: stores.accounts,
    quota,
    clock,
    random,
    sessions,
  });
  // Link ids are bearer capabilities: stored as their hash, sealed for the owner's listing under the server key.
  const links = new LinkService({
    links: stores.links,
    writeGuard: albums.writeGuard,
    sessions: stores.quota,
    catalog: stores.quota,
    uploads,
    assets,
    quota,
    clock,
    random,
    sealer: keyBox,
    recentAuth: sessions,
  });
  // Before serving: links an earlier build stored in clear move to their hash (no id is logged).
  const movedLinks = await links.sealClearIds();
  if (movedLinks > 0) logger.info('links.sealed_in_place', { count: movedLinks });
  const sync = new SyncService({
    log: stores.sync,
    links: stores.links,
    clock,
    sealer: keyBox,
    tombstoneDays: config.syncTombstoneDays,
  });
  const deletion = new AccountDeletionService({
    erasure: stores.erasure,
    accounts: stores.accounts,
    sponsorship: stores.sponsorship,
    sessions,
    clock,
    logger,
    policy: quota.policy,
  });
  const blobReads = new BlobReadService({
    catalog: stores.quota,
    links: stores.links,
    blobs: stores.blobs,
    ledger: stores.quota,
    clock,
  });
  const upgrades = new UpgradeService({
    albums: stores.albums,
    directories: stores.devices,
    uploads: stores.quota,
    clock,
    window,
  });
  const totpRecovery = new TotpRecoveryService({
    challenges: stores.totp,
    directories: stores.devices,
    recovery: stores.secondFactor,
    accounts: stores.accounts,
    sessions,
    clock,
  });
  const oidc = buildOidc(config, stores, platform, sessions, window, secretKey, registration);
  const signInMethods = new SignInMethodsService({
    accounts: stores.accounts,
    totp: stores.totp,
    links: stores.oidc,
    localSignIn: config.authLocal,
  });
  // Discovery and federation.
  const discovery = new DiscoveryService({
    handles: stores.discovery,
    accounts: stores.accounts,
    directories: stores.devices,
    clock,
    baseUrl: config.baseUrl,
    sessions,
    buckets: stores.discovery,
    lookupRate: config.lookupRate,
  });
  const peers =
    platform.peers ??
    new HttpPeers({ clock, timeoutMs: config.federationTimeoutMs, revokedTtlMs: config.federationRevokedCacheMs });
  const federation = new FederationService({
    keyRing,
    clock,
    random,
    baseUrl: config.baseUrl,
    peers: config.federationPeers,
    rate: config.federationRate,
    directory: peers,
    forwarder: peers,
    revocations: stores.discovery,
    buckets: stores.discovery,
  });
  return {
    passwordChecks: hasher,
    totpRecovery,
    config,
    clock,
    random,
    logger,
    window,
    stores,
    keyRing,
    tokens,
    sessions,
    accounts,
    totp,
    devices,
    revokeAll,
    albums,
    upgrades,
    writeGuard: albums.writeGuard,
    quota,
    uploads,
    resumable,
    assets,
    metrics: new HttpMetrics(),
    oidc,
    registration,
    operator: new OperatorService({
      census: stores.census,
      accounts: stores.accounts,
      sessions,
      quota,
      totp: stores.totp,
      links: stores.oidc,
      clock,
      policy: sessions.policy,
    }),
    signInMethods,
    deprecations,
    protocol,
    attestation,
    sponsorship,
    links,
    blobReads,
    discovery,
    federation,
    sync,
    deletion,
  };
}

/**
 * OpenID Connect sign-in over the configured provider. Discovery starts now without holding the
 * start up: a provider that is down leaves OIDC answering 503 until it is back.
 */
function buildOidc(
  config: Config,
  stores: Stores,
  platform: Platform,
  sessions: SessionService,
  window: ProtocolWindow,
  secretKey: Uint8Array,
  registration: RegistrationGate,
): OidcService | null {
  if (config.oidc === null) return null;
  const { clock, random, logger } = platform;
  let provider = platform.identityProvider;
  if (provider === undefined) {
    const rp = new OidcRelyingParty({
      issuer: config.oidc.issuer,
      clientId: config.oidc.clientId,
      clientSecret: config.oidc.clientSecret,
      redirectUri: `${config.baseUrl}/v1/auth/oidc/callback`,
      scopes: config.oidc.scopes,
      logger,
    });
    void rp.start();
    provider = rp;
  }
  // The PKCE verifier waits in the database sealed under the same key as TOTP secrets.
  const sealer = new TotpSecretBox({ key: secretKey, random });
  return new OidcService({
    provider,
    flows: stores.oidc,
    links: stores.oidc,
    accounts: stores.accounts,
    sessions,
    sealer,
    clock,
    random,
    logger,
    returnUris: config.oidc.returnUris,
    localSignIn: config.authLocal,
    window,
    registration,
  });
}
