import autocannon from 'autocannon';
import { runLoad, type LoadResult } from './load.js';
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';

export const VERSION = '2026-11-01';
export const PASSWORD = 'correct horse battery staple';
const ROOT = join(import.meta.dirname, '..');

export interface Running {
  url: string;
  stop(): Promise<void>;
}

/** How servers are started: a command prefix such as `taskset -c 1` (see pinning.ts). */
let launchPrefix: string[] = [];
/** Sets the prefix every later process starts behind; returns the one it replaces. */
export function setLaunchPrefix(prefix: string[]): string[] {
  const before = launchPrefix;
  launchPrefix = prefix;
  return before;
}

/** Spawns `node ...args`, behind the launch prefix when one is set. */
export function spawnNode(args: string[], options: SpawnOptions): ChildProcess {
  const [cmd, ...rest] =
    launchPrefix.length > 0 ? [...launchPrefix, process.execPath, ...args] : [process.execPath, ...args];
  return spawn(cmd!, rest, options);
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  // A minute: on a loaded machine tsx alone can take a good part of it.
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server at ${url} did not start`);
}

function stopper(child: ChildProcess, cleanup: () => void): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        cleanup();
        return resolve();
      }
      child.once('exit', () => {
        cleanup();
        resolve();
      });
      child.kill('SIGTERM');
    });
}

/** The real server in its own process, on loopback, on SQLite (default) or the given database URL. */
export async function startServer(
  port: number,
  env: Record<string, string> = {},
  /** Reuse this data dir and leave it in place on stop (the growth mode restarts on its seeded store). */
  keepDataDir?: string,
  /** The checkout whose server to start (another commit's, for bench/ab.ts). */
  root = ROOT,
  /**
   * SVC_WORKERS: with more than one, the log goes to a file in the data dir until every worker
   * said it listens (a connection made before then would stay with the first worker for the run).
   */
  workers = 1,
): Promise<Running & { dataDir: string; pid: number }> {
  const dataDir = keepDataDir ?? mkdtempSync(join(tmpdir(), 'strongroom-bench-'));
  const logFile = workers > 1 ? join(dataDir, `server-${port}.log`) : null;
  const logFd = logFile ? openSync(logFile, 'a') : null;
  const child = spawnNode(['--import', 'tsx', 'apps/server/src/main.ts'], {
    cwd: root,
    // The upload scenarios open sessions on one account for seconds without finishing them: the
    // per-payer cap on open sessions (SVC_MAX_OPEN_UPLOADS, default 1,000) would refuse the rest.
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_BASE_URL: `http://127.0.0.1:${port}`,
      SVC_MAX_OPEN_UPLOADS: '1000000000',
      ...(workers > 1 ? { SVC_WORKERS: String(workers) } : {}),
      ...env,
    },
    // Request log lines to a pipe would cost the server time: /dev/null, or a file; keep stderr.
    stdio: ['ignore', logFd ?? 'ignore', 'inherit'],
  });
  if (logFd !== null) closeSync(logFd);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${url}/.well-known/svc/server-info`, child);
    for (let i = 0; logFile && i < 600; i++) {
      const listening = readFileSync(logFile, 'utf8').split('"event":"server.listening"').length - 1;
      if (listening >= workers) break;
      if (i === 599) throw new Error(`only ${listening} of ${workers} workers listen`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    // Never left behind: a primary's workers follow it out.
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url,
    dataDir,
    pid: child.pid!,
    stop: stopper(child, () => (keepDataDir ? undefined : rmSync(dataDir, { recursive: true, force: true }))),
  };
}

/**
 * A server script of the bench (`bench/...ts`) in its own process on PORT, ready once `readyPath`
 * answers below 500; `cleanup` runs after it stopped.
 */
export async function startScript(
  script: string,
  port: number,
  readyPath: string,
  env: Record<string, string> = {},
  cleanup = () => {},
): Promise<Running & { pid: number }> {
  const child = spawnNode(['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}${readyPath}`, child);
  return { url, pid: child.pid!, stop: stopper(child, cleanup) };
}

/** A bare Hono route in its own process: the baseline every figure is divided by. */
export function startBare(port: number): Promise<Running> {
  return startScript('bench/bare-server.ts', port, '/bare');
}

/** The middle value (the upper one of an even count): every bench figure is a median of rounds. */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** What one measured run gives (load.ts's figures, whichever generator ran). */
export type Figures = LoadResult;

export interface Load {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** Different bodies per request (autocannon cycles through them). */
  requests?: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (req: any) => any;
  }[];
  connections?: number;
  seconds?: number;
  /** Local addresses the connections bind in turn (sockets generator only). */
  localAddresses?: string[];
}

/**
 * CPU time (user + system) a process has used so far, in microseconds, from /proc; null where
 * there is no /proc. Divided by the requests served, it is a steadier figure than req/s on a
 * machine whose speed drifts: it does not depend on how fast the load generator keeps up.
 */
export function cpuMicros(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1_000_000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** CPU time of this database's backends, per backend pid, read from /proc. */
export async function backendCpu(client: pg.Client): Promise<Map<number, number>> {
  const { rows } = await client.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const us = cpuMicros(pid);
    if (us !== null) cpu.set(pid, us);
  }
  return cpu;
}

/** CPU the backends used between two readings (a backend that ended meanwhile is not counted). */
export function backendDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, us] of after) sum += us - (before.get(pid) ?? 0);
  return sum;
}

/**
 * CPU time of a process and its direct children (a server's worker processes), in microseconds;
 * null where there is no /proc. A child that exited between two readings takes its time with it,
 * so read both ends of a run while the workers live.
 */
export function treeCpuMicros(pid: number): number | null {
  const own = cpuMicros(pid);
  if (own === null) return null;
  return childrenOf(pid).reduce((sum, child) => sum + (cpuMicros(child) ?? 0), own);
}

/** The pids whose parent is `pid` (from each /proc/N/stat's fourth field). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return children;
}

/**
 * The whole machine's CPU time so far, summed over its cores, in microseconds: busy (everything but
 * idle and I/O wait) and in all, from /proc/stat's first line; null where there is none. Between
 * two readings, busy ÷ all is the share of the machine's cores that did work.
 */
export function machineCpuMicros(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal (guest time is inside user already).
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    const scale = 1_000_000 / CLOCK_TICKS;
    return { busy: busy * scale, total: (busy + idle! + iowait!) * scale };
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK). */
const CLOCK_TICKS = 100;

/** Which load generator `measure` drives: the bench's own (load.ts) unless BENCH_LOADGEN=autocannon. */
export type LoadGenerator = 'sockets' | 'autocannon';
export const LOAD_GENERATOR: LoadGenerator = process.env.BENCH_LOADGEN === 'autocannon' ? 'autocannon' : 'sockets';

export async function measure(load: Load, generator: LoadGenerator = LOAD_GENERATOR): Promise<Figures> {
  const connections = load.connections ?? 20;
  const seconds = load.seconds ?? Number(process.env.BENCH_SECONDS ?? 5);
  if (generator === 'sockets') {
    const { method, headers, body, requests, localAddresses } = load;
    return runLoad({
      url: load.url,
      connections,
      seconds,
      ...(method ? { method } : {}),
      ...(headers ? { headers } : {}),
      ...(body !== undefined ? { body } : {}),
      ...(requests ? { requests } : {}),
      ...(localAddresses ? { localAddresses } : {}),
    });
  }
  const result = await autocannon({
    url: load.url,
    method: load.method ?? 'GET',
    headers: load.headers,
    body: load.body,
    requests: load.requests as never,
    connections,
    duration: seconds,
  });
  const stats = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  const statuses = Object.fromEntries(Object.entries(stats).map(([code, { count }]) => [code, count]));
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    ok: result['2xx'],
    duration: result.duration,
    statuses,
  };
}

export async function api(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { 'x-svc-protocol': VERSION };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

export async function register(
  url: string,
  address: string,
): Promise<{ session_id: string; session_token: string; access_token: string }> {
  // Scenarios register many accounts at once; past what the hasher may queue the server sheds
  // them (503 error.server.busy), and a client tries again after Retry-After, as this does.
  for (let attempt = 1; ; attempt++) {
    const r = await api(url, 'POST', '/v1/auth/register', { address, password: PASSWORD });
    if (r.status === 200) return r.body;
    if (r.status !== 503 || r.body?.code !== 'error.server.busy' || attempt >= 60)
      throw new Error(`register: ${r.status} ${JSON.stringify(r.body)}`);
    await new Promise((done) => setTimeout(done, 1000 * (0.5 + Math.random())));
  }
}
