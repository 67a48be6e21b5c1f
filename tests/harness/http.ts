import { Argon2Hasher } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { FakeClock, MemoryBlobStore, MemoryLogger, SeededRandom, breakable } from '@strongroom/core/testing';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Hono } from 'hono';
import type { BlobStore } from '@strongroom/core';
import { createApp, keepEveryHeaderLine } from '@strongroom/server';
import { readConfig, type Config } from '@strongroom/server/config';
import { buildDeps, type AppDeps, type Platform, type Stores } from '@strongroom/server/deps';
import { recordAnswer, undocumentedAnswers } from './documented.js';

export const VERSION = '2026-11-01';
export const PASSWORD = 'correct horse battery staple';

export interface TestServer {
  app: Hono;
  /** The app served by @hono/node-server on a loopback port: the production request path. */
  baseUrl: string;
  /** One request through the real server (loopback), like `app.request()` but on the production path. */
  request(path: string, init?: RequestInit): Promise<Response>;
  deps: AppDeps;
  clock: FakeClock;
  logger: MemoryLogger;
  /** Connections the server holds open now (a test that opens many waits until all are accepted). */
  connections(): Promise<number>;
  /** Makes every store call fail like an unreachable database, until mend(). */
  breakStore(): void;
  mendStore(): void;
  /** Breaks only the second-factor store (enrollments and challenges), until mendTotpStore(). */
  breakTotpStore(): void;
  mendTotpStore(): void;
  close(): Promise<void>;
  /** The raw SQLite database under the stores, for tests that tamper with it. */
  db: ReturnType<typeof openSqliteDatabase>;
}

/**
 * A real app over a real in-memory SQLite database and real argon2id, with a fake clock and seeded
 * randomness. Stores are wrapped so a test can break them. Areas extend `stores` here as they land.
 */
export async function testServer(
  env: Record<string, string> = {},
  platform: Partial<Pick<Platform, 'identityProvider' | 'hasher'>> = {},
  options: { blobs?: BlobStore } = {},
): Promise<TestServer> {
  const config: Config = readConfig({
    SVC_BASE_URL: 'http://127.0.0.1:8080',
    SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    ...env,
  });
  const clock = new FakeClock();
  const logger = new MemoryLogger();
  const db = openSqliteDatabase(':memory:');
  const ports = createSqlitePorts(db, { queueBound: config.storeQueue });
  const accounts = breakable(ports.accounts);
  const totp = breakable(ports.totp);
  const schema = breakable(ports.schema);
  const stores: Stores = {
    ...ports,
    accounts: accounts.port,
    totp: totp.port,
    schema: schema.port,
    blobs: options.blobs ?? new MemoryBlobStore(),
    close: async () => void db.close(),
  };
  const deps = await buildDeps(config, stores, {
    clock,
    random: new SeededRandom(testSeed()),
    logger,
    hasher: new Argon2Hasher(),
    ...platform,
  });
  const app = createApp(deps);
  const { baseUrl, close, connections } = await listen(app);
  return {
    app,
    baseUrl,
    connections,
    request: (path, init) => fetch(baseUrl + path, { redirect: 'manual', ...init }),
    deps,
    clock,
    logger,
    breakStore: () => {
      accounts.break();
      schema.break();
    },
    mendStore: () => {
      accounts.mend();
      schema.mend();
    },
    breakTotpStore: () => totp.break(),
    mendTotpStore: () => totp.mend(),
    close: async () => {
      // Every status this server answered must be on its operation in the document it serves.
      const undocumented = await undocumentedAnswers(app);
      await close();
      await stores.close();
      if (undocumented.length > 0)
        throw new Error(`Answers the OpenAPI document does not list on their operation:\n${undocumented.join('\n')}`);
    },
    db,
  };
}

/** Where each test app listens, so `call(app, …)` takes the production path (Node's request, not app.request). */
const listening = new WeakMap<Hono, string>();

/**
 * Serves the app the way main.ts does (@hono/node-server) on an ephemeral loopback port. HTTP tests
 * then exercise the same header and body reading as production, not a second path.
 */
export async function listen(
  app: Hono,
): Promise<{ baseUrl: string; close(): Promise<void>; connections(): Promise<number> }> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  server.unref();
  // Each answer's status, kept for the check at close, watched from the side: an answer that never
  // finished (the client hung up mid-body) reached no one and is not kept.
  (server as Server).on('request', (req, res) =>
    res.once('finish', () =>
      recordAnswer(app, {
        method: req.method ?? '',
        path: (req.url ?? '/').split('?')[0]!,
        status: res.statusCode,
      }),
    ),
  );
  keepEveryHeaderLine(server as Server);
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  listening.set(app, baseUrl);
  return {
    baseUrl,
    connections: () =>
      new Promise((resolve, reject) => server.getConnections((error, n) => (error ? reject(error) : resolve(n)))),
    close: () =>
      new Promise<void>((resolve) => {
        listening.delete(app);
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * The seed of this run's test randomness: TEST_SEED when set (to replay a failure), else a fresh
 * one, printed once so a failing run can be replayed.
 */
let seed: number | undefined;
export function testSeed(): number {
  if (seed === undefined) {
    const fromEnv = Number(process.env.TEST_SEED);
    seed =
      Number.isSafeInteger(fromEnv) && process.env.TEST_SEED !== undefined
        ? fromEnv
        : Math.floor(Math.random() * 2 ** 31);
    console.info(`test randomness seed ${seed} (replay with TEST_SEED=${seed})`);
  }
  return seed;
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
  // Redirects are answers to check, not to follow (app.request() never follows them either).
  return { method, headers, redirect: 'manual', ...(body !== undefined ? { body } : {}) };
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

/** One request, JSON in and out: through the real server when the app is a test server's, else app.request(). */
export async function call(app: Hono, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  const base = listening.get(app);
  return reply(
    await (base === undefined ? app.request(path, requestInit(method, o)) : fetch(base + path, requestInit(method, o))),
  );
}

/** The same over the network, for tests of real server processes. */
export async function fetchCall(baseUrl: string, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  return reply(await fetch(baseUrl + path, requestInit(method, o)));
}

let counter = 0;
/** Registers a fresh account and returns its token pair and address. */
export async function registerUser(
  app: Hono,
  address = `user${++counter}-${(testSeed() + counter).toString(36)}@example.org`,
) {
  const r = await call(app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  if (r.status !== 200) throw new Error(`register failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { address, ...(r.body as { session_id: string; session_token: string; access_token: string }) };
}
