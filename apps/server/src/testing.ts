import { Argon2Hasher } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { FakeClock, MemoryBlobStore, MemoryLogger, SeededRandom, breakable } from '@strongroom/core/testing';
import type { Hono } from 'hono';
import { createApp } from './app.js';
import { readConfig, type Config } from './config.js';
import { buildDeps, type AppDeps, type Platform, type Stores } from './deps.js';

export const VERSION = '2026-11-01';
export const PASSWORD = 'correct horse battery staple';

export interface TestServer {
  app: Hono;
  deps: AppDeps;
  clock: FakeClock;
  logger: MemoryLogger;
  /** Makes every store call fail like an unreachable database, until mend(). */
  breakStore(): void;
  mendStore(): void;
  /** Breaks only the second-factor store (enrollments and challenges), until mendTotpStore(). */
  breakTotpStore(): void;
  mendTotpStore(): void;
  close(): Promise<void>;
}

/**
 * A real app over a real in-memory SQLite database and real argon2id, with a fake clock and seeded
 * randomness. Stores are wrapped so a test can break them. Areas extend `stores` here as they land.
 */
export async function testServer(env: Record<string, string> = {}, platform: Pick<Platform, 'identityProvider'> = {}): Promise<TestServer> {
  const config: Config = readConfig({ SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc', ...env });
  const clock = new FakeClock();
  const logger = new MemoryLogger();
  const db = openSqliteDatabase(':memory:');
  const ports = createSqlitePorts(db);
  const accounts = breakable(ports.accounts);
  const totp = breakable(ports.totp);
  const stores: Stores = { ...ports, accounts: accounts.port, totp: totp.port, blobs: new MemoryBlobStore(), close: async () => void db.close() };
  const deps = await buildDeps(config, stores, { clock, random: new SeededRandom(Math.floor(Math.random() * 1e9)), logger, hasher: new Argon2Hasher(), ...platform });
  return {
    app: createApp(deps),
    deps,
    clock,
    logger,
    breakStore: () => accounts.break(),
    mendStore: () => accounts.mend(),
    breakTotpStore: () => totp.break(),
    mendTotpStore: () => totp.mend(),
    close: () => stores.close(),
  };
}

export interface CallOptions {
  body?: unknown;
  /** Canonical CBOR, sent as application/cbor. */
  cbor?: Uint8Array;
  raw?: BodyInit;
  contentType?: string;
  token?: string;
  version?: string | null;
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

function requestInit(method: string, o: CallOptions): RequestInit {
  const headers: Record<string, string> = { ...o.headers };
  if (o.version !== null) headers['x-svc-protocol'] = o.version ?? VERSION;
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: BodyInit | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  } else if (o.cbor) {
    body = o.cbor.slice();
    headers['content-type'] = 'application/cbor';
  }
  if (o.contentType) headers['content-type'] = o.contentType;
  return { method, headers, ...(body !== undefined ? { body } : {}) };
}

async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** One request through app.request(), JSON in and out. */
export async function call(app: Hono, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  return reply(await app.request(path, requestInit(method, o)));
}

/** The same over the network, for tests of real server processes. */
export async function fetchCall(baseUrl: string, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  return reply(await fetch(baseUrl + path, requestInit(method, o)));
}

let counter = 0;
/** Registers a fresh account and returns its token pair and address. */
export async function registerUser(app: Hono, address = `user${++counter}-${Math.random().toString(36).slice(2, 8)}@example.org`) {
  const r = await call(app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  if (r.status !== 200) throw new Error(`register failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { address, ...(r.body as { session_id: string; session_token: string; access_token: string }) };
}
