import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { VERSION } from '@strongroom/tests';
import { serverArgs } from '@strongroom/tests/spawn';

/**
 * SVC_WORKERS=2: one port, two worker processes under a primary. Which worker answered is read
 * from the request's log line (every line of a worker carries `worker`), never from the response.
 * Each request goes on a connection of its own, so the primary's round-robin hands consecutive
 * requests to different workers.
 */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const PG_URL = pgUrlFromEnv();

interface LogLine {
  event?: string;
  worker?: number;
  pid?: number;
  port?: number;
  [k: string]: unknown;
}

interface Cluster {
  readonly url: string;
  readonly child: ChildProcess;
  /** Worker number -> pid, from the workers' `server.listening` lines. */
  readonly workers: Map<number, number>;
  /** The next `http.request` line (requests are sent one at a time, so it is that request's). */
  nextRequestLine(): Promise<LogLine>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  /** The primary's `worker.exited` lines so far. */
  readonly exits: LogLine[];
}

async function startCluster(env: Record<string, string>, nodeArgs: string[] = []): Promise<Cluster> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sr-workers-'));
  const child = spawn(process.execPath, await serverArgs(nodeArgs), {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
      SVC_WORKERS: '2',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  void exited.then(() => rmSync(dataDir, { recursive: true, force: true }));
  const workers = new Map<number, number>();
  const exits: LogLine[] = [];
  const requestLines: LogLine[] = [];
  const waiting: ((line: LogLine) => void)[] = [];
  let port = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`workers did not start in time: ${stderr}`)), 60_000);
    void exited.then(({ code, signal }) =>
      reject(new Error(`server exited (${code ?? signal}) before listening: ${stderr}`)),
    );
    createInterface({ input: child.stdout! }).on('line', (text) => {
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        return;
      }
      if (line.event === 'worker.exited') exits.push(line);
      if (line.event === 'http.request') {
        const waiter = waiting.shift();
        if (waiter) waiter(line);
        else requestLines.push(line);
      }
      if (line.event === 'server.listening' && line.worker !== undefined) {
        workers.set(line.worker, line.pid!);
        port = line.port!;
        if (workers.size === 2) {
          clearTimeout(timer);
          resolve();
        }
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    workers,
    exited,
    exits,
    stderr: () => stderr,
    nextRequestLine: () => {
      const line = requestLines.shift();
      return line ? Promise.resolve(line) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

/** One request on a connection of its own; resolves with its status, body, and the worker that logged it. */
async function send(
  c: Cluster,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; cbor?: Uint8Array } = {},
): Promise<{ status: number; body: any; worker: number }> {
  const payload = o.cbor ? Buffer.from(o.cbor) : o.body === undefined ? undefined : JSON.stringify(o.body);
  const type = o.cbor ? 'application/cbor' : 'application/json';
  const reply = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(
      `${c.url}${path}`,
      {
        method,
        agent: false,
        headers: {
          connection: 'close',
          'x-svc-protocol': VERSION,
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(payload ? { 'content-type': type, 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text.startsWith('{') ? JSON.parse(text) : text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
  const line = await c.nextRequestLine();
  return { ...reply, worker: line.worker! };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

type OpenStore = () => Promise<{ env: Record<string, string>; drop(): Promise<void> }>;
const stores: [string, OpenStore][] = [
  ['SQLite (one database file, WAL)', async () => ({ env: {}, drop: async () => undefined })],
];
if (PG_URL) {
  stores.push([
    'PostgreSQL',
    async () => {
      const db: ScratchDatabase = await createScratchDatabase(PG_URL, 'workers');
      return { env: { SVC_DATABASE_URL: db.url }, drop: () => db.drop() };
    },
  ]);
}
if (!PG_URL) console.warn('workers.test.ts: PostgreSQL case SKIPPED: PG_URL is not set.');

describe.each(stores)('SVC_WORKERS=2 on %s', { timeout: 60_000 }, (_name, open) => {
  let c: Cluster;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const store = await open();
    drop = store.drop;
    c = await startCluster(store.env);
  }, 90_000);
  afterAll(async () => {
    if (c && c.child.exitCode === null) c.child.kill('SIGKILL');
    await c?.exited;
    await drop?.();
  });

  it('both workers serve, and a session revoked through one is refused by the other on its next request', async () => {
    const address = `workers-${randomBytes(4).toString('hex')}@example.org`;
    const registered = await send(c, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
    expect(registered.status).toBe(200);
    const victim = registered.body as { session_id: string; session_token: string; access_token: string };
    const other = (await send(c, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } })).body as {
      access_token: string;
    };
    const seen = new Set<number>();
    for (let i = 0; i < 10 && seen.size < 2; i++) {
      const read = await send(c, 'GET', '/v1/auth/profile', { token: victim.access_token });
      expect(read.status).toBe(200);
      seen.add(read.worker);
    }
    expect([...seen].sort()).toEqual([1, 2]);

    const revoke = await send(c, 'DELETE', `/v1/auth/sessions/${victim.session_id}`, { token: other.access_token });
    expect(revoke.status).toBe(204);
    // Every later request with the revoked session is refused, the first one on the other worker included.
    let onOther = 0;
    for (let i = 0; i < 10 && onOther === 0; i++) {
      const read = await send(c, 'GET', '/v1/auth/profile', { token: victim.access_token });
      expect(read).toMatchObject({ status: 401, body: { code: 'error.auth.session_invalid' } });
      if (read.worker !== revoke.worker) onOther++;
    }
    expect(onOther).toBe(1);
    const refresh = await send(c, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } });
    expect(refresh.status).toBe(401);
  });

  it('writes sent together through both workers all land: none is refused because the other process wrote first', async () => {
    // Read-then-write transactions that began as readers could not take the write lock once the
    // other process had committed (SQLite's BUSY_SNAPSHOT, answered 503 error.store.unavailable).
    const accounts = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const r = await send(c, 'POST', '/v1/auth/register', {
          body: { address: `burst-${i}-${randomBytes(3).toString('hex')}@example.org`, password: PASSWORD },
        });
        expect(r.status).toBe(200);
        const token = r.body.access_token as string;
        const id = (await send(c, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
        return { token, id };
      }),
    );
    for (let round = 0; round < 3; round++) {
      const published = await Promise.all(
        accounts.map(({ token, id }) =>
          send(c, 'PUT', '/v1/devices/directory', {
            token,
            cbor: new TestIdentity(id).signDirectory(id, round + 1, [new TestDevice(`d${round}`)]),
          }),
        ),
      );
      expect(published.map((r) => r.status).filter((status) => status >= 300)).toEqual([]);
    }
  });

  it('one scrape answers for every worker: repeated scrapes see the same totals, and counters that only grow', async () => {
    const value = (text: string, series: string): number | null => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? null : Number(line.slice(series.length + 1));
    };
    const registered = 'strongroom_http_requests_total{method="POST",route="/v1/auth/register",status="200"}';
    const scraped = 'strongroom_http_requests_total{method="GET",route="/metrics",status="200"}';
    const TOTALS = [
      'strongroom_accounts',
      'strongroom_sessions_open',
      'strongroom_quota_used_bytes',
      'strongroom_quota_reserved_bytes',
      'strongroom_blobs_stored',
      'strongroom_blobs_stored_bytes',
      'strongroom_uploads_open',
    ];
    // Worker 1 counts the totals as it starts; until its first count lands they are absent.
    let first = await send(c, 'GET', '/metrics');
    for (let i = 0; i < 50 && value(first.body, 'strongroom_accounts') === null; i++)
      first = await send(c, 'GET', '/metrics');
    const totals = TOTALS.map((name) => value(first.body, name));
    expect(totals.every((v) => v !== null)).toBe(true);
    const workersSeen = new Set<number>();
    let lastScrapes = value(first.body, scraped) ?? 0;
    for (let i = 0; i < 6; i++) {
      const r = await send(c, 'GET', '/metrics');
      expect(r.status).toBe(200);
      workersSeen.add(r.worker);
      // Every registration of the earlier tests (1 + 24, through both workers), whichever worker answers.
      expect(value(r.body, registered)).toBe(25);
      const scrapes = value(r.body, scraped)!;
      expect(scrapes).toBeGreaterThan(lastScrapes);
      lastScrapes = scrapes;
      expect(TOTALS.map((name) => value(r.body, name))).toEqual(totals);
      // A total is counted by one process: it appears once, never once per worker.
      expect(r.body.split('\n').filter((l: string) => l.startsWith('strongroom_accounts ')).length).toBe(1);
    }
    expect([...workersSeen].sort()).toEqual([1, 2]);
  });

  it('SIGTERM drains every worker and the primary exits 0', async () => {
    const pids = [...c.workers.values()];
    expect(pids.every(alive)).toBe(true);
    c.child.kill('SIGTERM');
    expect(await c.exited).toEqual({ code: 0, signal: null });
    expect(pids.filter(alive)).toEqual([]);
  });
});

describe('SVC_WORKERS=2: a worker that dies', { timeout: 60_000 }, () => {
  it('is not replaced: the other worker drains and the primary exits non-zero', async () => {
    const c = await startCluster({});
    try {
      const [first, second] = [c.workers.get(1)!, c.workers.get(2)!];
      process.kill(first, 'SIGKILL');
      const { code } = await c.exited;
      expect(code).toBe(1);
      expect(alive(second)).toBe(false);
      // The other one was asked to drain, and did: a clean exit, not a kill.
      expect(c.exits.find((e) => e.pid === second)).toMatchObject({ code: 0, signal: null });
    } finally {
      if (c.child.exitCode === null) c.child.kill('SIGKILL');
    }
  }, 90_000);
});

describe('SVC_WORKERS=2: a worker whose fsync fails', { timeout: 60_000 }, () => {
  it('takes the whole server down with 74: the other worker is killed, not closed cleanly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sr-workers-fsync-'));
    const flag = join(dir, 'fail-fsync');
    // Workers inherit the primary's node flags, the failing fsync among them.
    const c = await startCluster({ SR_FAULT_FSYNC_FLAG: flag }, ['--import', './tests/harness/fault/failing-fsync.ts']);
    try {
      const registered = await send(c, 'POST', '/v1/auth/register', {
        body: { address: `fsync-${randomBytes(3).toString('hex')}@example.org`, password: PASSWORD },
      });
      expect(registered.status).toBe(200);
      writeFileSync(flag, '');
      // A durable write on either worker now fails its fsync; nothing is acknowledged.
      const during = await send(c, 'POST', '/v1/auth/refresh', {
        body: { session_token: registered.body.session_token },
      }).catch((e: Error) => e);
      if (!(during instanceof Error)) expect(during.status).toBe(503);
      const pids = [...c.workers.values()];
      expect(await c.exited).toEqual({ code: 74, signal: null });
      expect(pids.filter(alive)).toEqual([]);
      // One worker lost durability and exited 74; the primary killed the other outright.
      expect(
        c.exits
          .map((e) => ({ code: e.code, signal: e.signal }))
          .sort((a, b) => String(a.code).localeCompare(String(b.code))),
      ).toEqual([
        { code: 74, signal: null },
        { code: null, signal: 'SIGKILL' },
      ]);
    } finally {
      if (c.child.exitCode === null) c.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
