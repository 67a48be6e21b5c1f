/**
 * The peers mode (`npm run bench -- --peers`): sign-in, session read and refresh (or the nearest
 * equivalent) on our server, on better-auth (peer-better-auth.ts) and on a naive jose + one-row
 * implementation (peer-naive.ts), each on the same store as ours, in the same rounds: every round
 * starts with a bare-route run, then each operation on each implementation, the order of the
 * implementations turning each round. Each figure is printed as a ratio to ours (median of the
 * per-round ratios) beside req/s and the process's CPU time per answered request, from /proc, so
 * that requests per core-second can be set beside published figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMicros, measure, median, PASSWORD, register, startScript, VERSION, type Load } from './lib.js';

export interface PeersFigures {
  lines: string[];
  json: Record<string, unknown>;
}

const ACCOUNTS = 20;
/**
 * Sign-ins in flight at once, per implementation. A password hash takes a large part of a second on
 * a loaded core: with many more in flight than hashers, a short run would see no answer at all, and
 * the backlog would run on into the next measurement.
 */
const SIGN_IN_CONNECTIONS = 4;

/** Waits (at most 30 s) until a process uses less than a tenth of a core: what it still had queued is done. */
async function quiet(pid: number): Promise<void> {
  let last = cpuMicros(pid);
  for (let i = 0; i < 120 && last !== null; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const now = cpuMicros(pid)!;
    if (now - last < 25_000) return;
    last = now;
  }
}
type Impl = 'ours' | 'better-auth' | 'naive';
type Operation = 'sign-in' | 'session read' | 'refresh';
const IMPLS: Impl[] = ['ours', 'better-auth', 'naive'];
const OPERATIONS: Operation[] = ['sign-in', 'session read', 'refresh'];

/** What each implementation's operation is, for the table. */
const ROUTES: Record<Impl, Record<Operation, string>> = {
  ours: {
    'sign-in': 'POST /v1/auth/login (argon2id)',
    'session read': 'GET /v1/auth/profile',
    refresh: 'POST /v1/auth/refresh',
  },
  'better-auth': {
    'sign-in': 'POST /api/auth/sign-in/email (its scrypt)',
    'session read': 'GET /api/auth/get-session',
    refresh: 'GET /api/auth/token (jwt plugin)',
  },
  naive: {
    'sign-in': 'POST /naive/login (argon2id)',
    'session read': 'GET /naive/profile',
    refresh: 'POST /naive/refresh',
  },
};

/** Sign-ins that name each of `addresses` in turn, `body` making one request's JSON. */
function signIns(
  url: string,
  path: string,
  body: (address: string) => unknown,
  headers: Record<string, string> = {},
): Load {
  const addresses = Array.from({ length: ACCOUNTS }, (_, i) => i);
  let next = 0;
  return {
    url: `${url}${path}`,
    connections: SIGN_IN_CONNECTIONS,
    requests: [
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...headers },
        setupRequest: (req: Record<string, unknown>) => ({
          ...req,
          body: JSON.stringify(body(String(addresses[next++ % ACCOUNTS]))),
        }),
      },
    ],
  };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return r;
}

async function oursLoads(url: string): Promise<Record<Operation, Load>> {
  const stamp = Date.now();
  const accounts = [];
  for (let i = 0; i < ACCOUNTS; i++) accounts.push(await register(url, `peers-${stamp}-${i}@example.org`));
  const json = { 'content-type': 'application/json', 'x-svc-protocol': VERSION };
  return {
    'sign-in': signIns(
      url,
      '/v1/auth/login',
      (i) => ({ address: `peers-${stamp}-${i}@example.org`, password: PASSWORD }),
      { 'x-svc-protocol': VERSION },
    ),
    'session read': {
      url: `${url}/v1/auth/profile`,
      headers: { authorization: `Bearer ${accounts[0]!.access_token}`, 'x-svc-protocol': VERSION },
    },
    refresh: {
      url: `${url}/v1/auth/refresh`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ session_token: accounts[1]!.session_token }),
    },
  };
}

async function betterAuthLoads(url: string): Promise<Record<Operation, Load>> {
  const email = (i: string | number) => `peers-${i}@example.org`;
  // Its CSRF check wants the page's origin on a POST from a fetch, as a browser on that origin sends.
  const origin = { origin: url };
  for (let i = 0; i < ACCOUNTS; i++)
    await post(`${url}/api/auth/sign-up/email`, { email: email(i), password: PASSWORD, name: `peer ${i}` }, origin);
  const signedIn = await post(`${url}/api/auth/sign-in/email`, { email: email(0), password: PASSWORD }, origin);
  // The session cookie alone (its signed value), as a browser would send it back.
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => c.includes('session_token'))
    .join('; ');
  if (!cookie) throw new Error('better-auth: no session cookie after sign-in');
  for (const path of ['/api/auth/get-session', '/api/auth/token']) {
    const r = await fetch(`${url}${path}`, { headers: { cookie } });
    if (r.status !== 200 || (await r.text()) === 'null') throw new Error(`better-auth ${path}: ${r.status}`);
  }
  return {
    'sign-in': signIns(url, '/api/auth/sign-in/email', (i) => ({ email: email(i), password: PASSWORD }), origin),
    'session read': { url: `${url}/api/auth/get-session`, headers: { cookie } },
    refresh: { url: `${url}/api/auth/token`, headers: { cookie } },
  };
}

async function naiveLoads(url: string): Promise<Record<Operation, Load>> {
  const email = (i: string | number) => `peers-${i}@example.org`;
  for (let i = 0; i < ACCOUNTS; i++) await post(`${url}/naive/register`, { email: email(i), password: PASSWORD });
  const first = (await (await post(`${url}/naive/login`, { email: email(0), password: PASSWORD })).json()) as {
    access_token: string;
    session_token: string;
  };
  return {
    'sign-in': signIns(url, '/naive/login', (i) => ({ email: email(i), password: PASSWORD })),
    'session read': { url: `${url}/naive/profile`, headers: { authorization: `Bearer ${first.access_token}` } },
    refresh: {
      url: `${url}/naive/refresh`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_token: first.session_token }),
    },
  };
}

interface Cell {
  rps: number[];
  ratio: number[];
  cpu: number[];
  failures: number;
}

export async function runPeers(
  store: string,
  ours: { url: string; pid: number },
  bareUrl: string,
  /** Scratch databases for better-auth and the naive server on PostgreSQL; null on SQLite. */
  pgUrls: [string, string] | null,
  opts: { seconds: number; rounds: number; ports: [number, number] },
): Promise<PeersFigures> {
  const dirs = [mkdtempSync(join(tmpdir(), 'strongroom-peer-')), mkdtempSync(join(tmpdir(), 'strongroom-peer-'))];
  const cleanup = (i: number) => () => rmSync(dirs[i]!, { recursive: true, force: true });
  const betterAuth = await startScript(
    'bench/peer-better-auth.ts',
    opts.ports[0],
    '/api/auth/ok',
    pgUrls ? { PEER_PG_URL: pgUrls[0] } : { PEER_DIR: dirs[0]! },
    cleanup(0),
  );
  const naive = await startScript(
    'bench/peer-naive.ts',
    opts.ports[1],
    '/naive/profile',
    pgUrls ? { PEER_PG_URL: pgUrls[1] } : { PEER_DIR: dirs[1]! },
    cleanup(1),
  ).catch(async (err: unknown) => {
    await betterAuth.stop();
    throw err;
  });
  try {
    const servers: Record<Impl, { pid: number; loads: Record<Operation, Load> }> = {
      ours: { pid: ours.pid, loads: await oursLoads(ours.url) },
      'better-auth': { pid: betterAuth.pid, loads: await betterAuthLoads(betterAuth.url) },
      naive: { pid: naive.pid, loads: await naiveLoads(naive.url) },
    };
    const cells = new Map<string, Cell>();
    const cell = (impl: Impl, op: Operation) =>
      cells.get(`${impl}|${op}`) ??
      cells.set(`${impl}|${op}`, { rps: [], ratio: [], cpu: [], failures: 0 }).get(`${impl}|${op}`)!;
    for (const impl of IMPLS)
      for (const op of OPERATIONS) await measure({ ...servers[impl].loads[op], seconds: op === 'sign-in' ? 3 : 1 });
    for (let round = 0; round < opts.rounds; round++) {
      await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds });
      const order = [...IMPLS.slice(round % IMPLS.length), ...IMPLS.slice(0, round % IMPLS.length)];
      for (const op of OPERATIONS) {
        const got = new Map<Impl, number>();
        for (const impl of order) {
          await quiet(servers[impl].pid);
          const before = cpuMicros(servers[impl].pid);
          const f = await measure({
            ...servers[impl].loads[op],
            seconds: op === 'sign-in' ? Math.max(10, opts.seconds * 3) : opts.seconds,
          });
          // CPU over the window alone, divided by what the window answered: the steady-state cost.
          const after = cpuMicros(servers[impl].pid);
          const c = cell(impl, op);
          // Only answered requests count: a peer's refusals are not throughput.
          const rate = f.ok / f.duration;
          c.rps.push(rate);
          c.failures += f.non2xx + f.errors;
          if (before !== null && after !== null && f.ok > 0) c.cpu.push((after - before) / f.ok);
          got.set(impl, rate);
        }
        for (const impl of IMPLS) cell(impl, op).ratio.push(got.get(impl)! / got.get('ours')!);
      }
    }
    const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
    const lines = [
      `${store}: sign-in, session read and refresh on ours, better-auth and a naive jose + one-row server, ${opts.rounds} rounds of ${opts.seconds} s, each round after a bare-route run; medians. Ratio = the peer's 2xx/s over ours in the same round. CPU: the server process's user + system time per 2xx answer (/proc); per core-second = 1 s ÷ that. Sign-ins: ${SIGN_IN_CONNECTIONS} connections, runs of ${Math.max(10, opts.seconds * 3)} s; each measurement starts once the process is idle again.`,
      '',
      '| operation | implementation | route | 2xx/s | ratio to ours (spread) | CPU per request | per core-second | non-2xx + errors |',
      '|---|---|---|---:|---:|---:|---:|---:|',
    ];
    for (const op of OPERATIONS) {
      for (const impl of IMPLS) {
        const c = cell(impl, op);
        const cpu = c.cpu.length > 0 ? median(c.cpu) : null;
        lines.push(
          `| ${op} | ${impl} | ${ROUTES[impl][op]} | ${fmt(median(c.rps))} | ${median(c.ratio).toFixed(2)} (${Math.min(...c.ratio).toFixed(2)}-${Math.max(...c.ratio).toFixed(2)}) | ${cpu === null ? '–' : `${fmt(cpu)} µs`} | ${cpu === null ? '–' : fmt(1e6 / cpu)} | ${c.failures} |`,
        );
      }
    }
    return {
      lines,
      json: {
        store,
        rows: OPERATIONS.flatMap((op) =>
          IMPLS.map((impl) => {
            const c = cell(impl, op);
            return {
              operation: op,
              implementation: impl,
              route: ROUTES[impl][op],
              rps: c.rps,
              ratio_to_ours: c.ratio,
              cpu_us_per_request: c.cpu,
              failures: c.failures,
            };
          }),
        ),
      },
    };
  } finally {
    await Promise.all([betterAuth.stop(), naive.stop()]);
  }
}
