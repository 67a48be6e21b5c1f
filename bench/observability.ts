/**
 * Per-request cost of what sits on every request for observability, measured in one process with
 * the candidates interleaved (so machine load hits them alike):
 *
 * - one `http.request` log line through the current JsonLogger (adapters-node) and through pino
 *   (async destination, redaction paths for every secret-bearing field), both written to /dev/null;
 * - one metrics record (RouteStats.record, what the app's fetch wrapper does per request);
 * - for scale, one authenticated GET /v1/auth/profile through the whole app in process
 *   (app.fetch, no socket).
 *
 *   node --import tsx bench/observability.ts [rounds]
 *
 * Micro-benchmarks only: they say what a line or a record costs next to a request, not what the
 * ratio to the bare route will be.
 */
import { openSync, writeSync } from 'node:fs';
import { pino } from 'pino';
import { JsonLogger } from '@strongroom/adapters-node';
import type { MemoryLogger } from '@strongroom/core/testing';
import { createApp } from '../apps/server/src/app.js';
import { HttpMetrics, RouteStats } from '../apps/server/src/http/metrics.js';
import { registerUser, testServer, VERSION } from '@strongroom/tests';
import { median } from './lib.js';

/** Every field that can carry a secret, at the top level and one level down (pino's redact paths). */
export const REDACT_PATHS = [
  'password',
  'new_password',
  'current_password',
  'session_token',
  'access_token',
  'refresh_token',
  'token',
  'authorization',
  'secret',
  'code',
  'challenge',
  'signature',
  'client_secret',
  'id_token',
  'cookie',
  '*.password',
  '*.session_token',
  '*.access_token',
  '*.token',
  '*.authorization',
  '*.secret',
  '*.code',
  '*.challenge',
  '*.signature',
  'headers.authorization',
  'headers.cookie',
];

const ROUNDS = Number(process.argv[2] ?? 7);
const LINES = 100_000;

const devNull = openSync('/dev/null', 'w');
const json = new JsonLogger((chunk) => void writeSync(devNull, chunk));
const pinoLogger = pino(
  {
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'event',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  },
  pino.destination({ dest: '/dev/null', sync: false, minLength: 4096 }),
);

/** The same without redaction, to tell what redaction itself costs. */
const pinoPlain = pino(
  { base: null, timestamp: pino.stdTimeFunctions.isoTime, messageKey: 'event' },
  pino.destination({ dest: '/dev/null', sync: false, minLength: 4096 }),
);

const fields = (i: number) => ({ method: 'GET', path: '/v1/auth/profile', status: 200, ms: (i % 50) / 10 });

/** CPU nanoseconds (user + system) this process spent since `since`: steadier than wall time on a shared machine. */
function cpuNs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) * 1000;
}

/**
 * CPU ns per call of `body`, run `count` times, letting the event loop turn (and the loggers write)
 * after every 1,000, so their deferred writes are counted too.
 */
async function timeIt(count: number, body: (i: number) => void): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    body(i);
    if (i % 1000 === 999) await new Promise<void>((r) => setImmediate(r));
  }
  await new Promise<void>((r) => setImmediate(r));
  return cpuNs(start) / count;
}

/** Metrics whose records do nothing: the app without the per-request metrics work, for the paired comparison. */
class NoMetrics extends HttpMetrics {
  override statsFor(method: string, template: string): RouteStats {
    const stats = super.statsFor(method, template);
    stats.record = () => undefined;
    return stats;
  }
}

async function main(): Promise<void> {
  const s = await testServer();
  const user = await registerUser(s.app);
  const headers = { 'x-svc-protocol': VERSION, authorization: `Bearer ${user.access_token}` };
  const stats = new RouteStats('GET', '/v1/auth/profile', false);
  const bare = createApp({ ...s.deps, metrics: new NoMetrics() });
  bare.fetch = bare.fetch.bind(bare);
  /** CPU ns per authenticated GET through `app`. */
  const requests = async (app: typeof s.app): Promise<number> => {
    const started = process.cpuUsage();
    for (let i = 0; i < 2_000; i++) {
      const res = await app.request('/v1/auth/profile', { headers });
      if (res.status !== 200) throw new Error(`GET /v1/auth/profile answered ${res.status}`);
      await res.arrayBuffer();
    }
    return cpuNs(started) / 2_000;
  };
  // The in-process app logs through a MemoryLogger; it is emptied every round.
  const logger: MemoryLogger = s.logger;

  const results: Record<string, number[]> = {
    'JsonLogger line': [],
    'pino line (redact)': [],
    'pino line (no redact)': [],
    'metrics record': [],
    'empty loop (overhead)': [],
    'authenticated GET in process': [],
    'same, metrics records off': [],
  };
  for (let round = 0; round < ROUNDS + 1; round++) {
    const r = {
      'JsonLogger line': await timeIt(LINES, (i) => json.info('http.request', fields(i))),
      'pino line (redact)': await timeIt(LINES, (i) => pinoLogger.info(fields(i), 'http.request')),
      'pino line (no redact)': await timeIt(LINES, (i) => pinoPlain.info(fields(i), 'http.request')),
      'metrics record': await timeIt(LINES, (i) => stats.record(200 + (i & 1), (i % 50) / 10_000)),
      'empty loop (overhead)': await timeIt(LINES, (i) => void fields(i)),
      'authenticated GET in process': await requests(s.app),
      'same, metrics records off': await requests(bare),
    };
    logger.lines.length = 0;
    if (round === 0) continue; // warm-up
    for (const [k, v] of Object.entries(r)) results[k]!.push(v);
  }
  json.flush();
  pinoLogger.flush();
  pinoPlain.flush();

  const request = median(results['authenticated GET in process']!);
  process.stdout.write(`median of ${ROUNDS} rounds (CPU ns per call; share of one in-process authenticated GET)\n`);
  for (const [k, v] of Object.entries(results)) {
    const m = median(v);
    process.stdout.write(
      `${k.padEnd(32)} ${m.toFixed(0).padStart(8)} ns   ${((m / request) * 100).toFixed(2).padStart(6)} %   [${v.map((x) => x.toFixed(0)).join(', ')}]\n`,
    );
  }
  await s.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
