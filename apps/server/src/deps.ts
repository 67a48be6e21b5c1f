import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  AccountService,
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
  type Logger,
  type PasswordHasher,
  type ProtocolWindow,
  type Random,
  AssetService,
  QuotaService,
  UploadService,
  type BlobStore,
  type Ports,
  DiscoveryService,
  FederationService,
  type PeerDirectory,
  type PeerLookup,
} from '@strongroom/core';
import { Argon2Hasher, FsBlobStore, HttpPeers, JsonLogger, cryptoRandom, systemClock } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts, openPgDatabase } from '@strongroom/adapters-pg';
import type { Config } from './config.js';
import { loadOrCreateSecretKey } from './secret-key.js';

/** The stores one deployment runs on: the database's port set, the blob store, and how to close them. */
export interface Stores extends Ports {
  /** Content-addressed ciphertext (the filesystem under the data dir). */
  readonly blobs: BlobStore;
  /** Releases connections and file handles. */
  close(): Promise<void>;
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
  readonly totp: TotpService;
  readonly devices: DeviceDirectoryService;
  readonly revokeAll: RevokeAllService;
  readonly albums: AlbumService;
  readonly upgrades: UpgradeService;
  /** Device, album, pin and quiescence checks every writing operation passes first. */
  readonly writeGuard: WriteGuard;
  readonly quota: QuotaService;
  readonly uploads: UploadService;
  readonly assets: AssetService;
  /** Handles, the opt-in public record and lookups of local accounts. */
  readonly discovery: DiscoveryService;
  /** Capability tokens between servers, forwarded lookups and the per-peer limit. */
  readonly federation: FederationService;
}

export interface Platform {
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly hasher: PasswordHasher;
  /** Peers' public records and forwarded lookups; HTTP on fetch unless a test supplies its own. */
  readonly peers?: PeerDirectory & PeerLookup;
}

export const nodePlatform = (): Platform => ({ clock: systemClock, random: cryptoRandom, logger: new JsonLogger(), hasher: new Argon2Hasher() });

/** Opens the configured database (SQLite under the data dir by default), migrating it forward. */
export async function openStores(config: Config): Promise<Stores> {
  const blobs = new FsBlobStore(join(config.dataDir, 'blobs'));
  if (config.databaseUrl !== null) {
    // Several stateless processes may share this database; every port call goes to it (no cache).
    const pg = await openPgDatabase(config.databaseUrl);
    return { ...createPgPorts(pg.db), blobs, close: () => pg.close() };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const db = openSqliteDatabase(join(config.dataDir, 'strongroom.db'));
  return { ...createSqlitePorts(db), blobs, close: async () => void db.close() };
}

/** How long a finalized web-upload drop waits for adoption before the sweep frees it. */
const DROP_TTL_MS = 7 * 86_400_000;

/** The key file under the data dir, created on first start; its path is logged, never the key. */
function secretKeyFromDataDir(dataDir: string, logger: Logger): Uint8Array {
  const { key, created, path } = loadOrCreateSecretKey(dataDir);
  if (created) logger.info('secret_key.created', { path });
  return key;
}

/** Wires the core services over a set of stores. */
export async function buildDeps(config: Config, stores: Stores, platform: Platform): Promise<AppDeps> {
  const { clock, random, logger, hasher } = platform;
  const keyRing = new KeyRing({ store: stores.accounts, clock, random, graceMs: config.keyGraceMs });
  await keyRing.init();
  const tokens = new AccessTokens({ keyRing, clock, random, issuer: config.baseUrl });
  const sessions = new SessionService({
    ledger: stores.accounts,
    cohorts: stores.accounts,
    tokens,
    clock,
    random,
    logger,
    policy: { idleMs: config.sessionIdleMs, maxMs: config.sessionMaxMs, touchIntervalMs: 60_000 },
  });
  const totp = new TotpService({
    store: stores.totp,
    accounts: stores.accounts,
    sessions,
    clock,
    random,
    logger,
    secretKey: config.secretKey ?? secretKeyFromDataDir(config.dataDir, logger),
    issuer: new URL(config.baseUrl).host,
  });
  const accounts = new AccountService({ accounts: stores.accounts, sessions, hasher, clock, random, loginGate: totp });
  const window = { min: config.protocolMin, max: config.protocolMax };
  const devices = new DeviceDirectoryService({ directories: stores.devices, clock });
  const revokeAll = new RevokeAllService({ challenges: stores.devices, directories: stores.devices, sessions, clock, random });
  const albums = new AlbumService({ albums: stores.albums, directories: stores.devices, clock, random, window });
  const quota = new QuotaService({
    ledger: stores.quota,
    blobs: stores.blobs,
    clock,
    random,
    policy: { defaults: { soft: config.quotaSoftBytes, hard: config.quotaHardBytes }, graceMs: config.quotaGraceMs, federatedShare: 0.25 },
  });
  const uploads = new UploadService({ sessions: stores.quota, assets: stores.quota, blobs: stores.blobs, quota, writeGuard: albums.writeGuard, clock, random, ttlMs: config.uploadTtlMs, dropTtlMs: DROP_TTL_MS });
  const assets = new AssetService({ assets: stores.quota, blobs: stores.blobs, quota, clock, random });
  const upgrades = new UpgradeService({ albums: stores.albums, directories: stores.devices, uploads: stores.quota, clock, window });
  // Discovery and federation.
  const discovery = new DiscoveryService({ handles: stores.discovery, accounts: stores.accounts, directories: stores.devices, clock, baseUrl: config.baseUrl });
  const peers = platform.peers ?? new HttpPeers({ clock, timeoutMs: config.federationTimeoutMs, revokedTtlMs: config.federationRevokedCacheMs });
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
    config,
    clock,
    random,
    logger,
    window: { min: config.protocolMin, max: config.protocolMax },
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
    assets,
    discovery,
    federation,
  };
}
