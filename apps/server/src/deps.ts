import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  AccountService,
  AccessTokens,
  KeyRing,
  SessionService,
  type AccountStore,
  type Clock,
  type CohortMap,
  type Logger,
  type PasswordHasher,
  type ProtocolWindow,
  type Random,
  type SessionLedger,
  type SigningKeyStore,
} from '@strongroom/core';
import { Argon2Hasher, JsonLogger, cryptoRandom, systemClock } from '@strongroom/adapters-node';
import { SqliteStore, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { PgStore, openPgDatabase } from '@strongroom/adapters-pg';
import type { Config } from './config.js';

/** The stores one deployment runs on, one entry per area (SQLite or PostgreSQL). */
export interface Stores {
  readonly accounts: AccountStore & SessionLedger & CohortMap & SigningKeyStore;
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
}

export interface Platform {
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly hasher: PasswordHasher;
}

export const nodePlatform = (): Platform => ({ clock: systemClock, random: cryptoRandom, logger: new JsonLogger(), hasher: new Argon2Hasher() });

/** Opens the configured database (SQLite under the data dir by default), migrating it forward. */
export async function openStores(config: Config): Promise<Stores> {
  if (config.databaseUrl !== null) {
    // Several stateless processes may share this database; every port call goes to it (no cache).
    const pg = await openPgDatabase(config.databaseUrl);
    return {
      accounts: new PgStore(pg.db),
      close: () => pg.close(),
    };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const db = openSqliteDatabase(join(config.dataDir, 'strongroom.db'));
  return {
    accounts: new SqliteStore(db),
    close: async () => {
      db.close();
    },
  };
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
  const accounts = new AccountService({ accounts: stores.accounts, sessions, hasher, clock, random });
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
  };
}
