/**
 * The workers mode (`npm run bench -- --workers`): every scenario against a server with one
 * process and one with SVC_WORKERS=2, in the same rounds (each round after a bare-route run, the
 * two servers' order alternating), on each store. Beside the throughput it reports the server's
 * CPU time per answered request, summed over the primary and every worker (from /proc), and on
 * PostgreSQL the CPU time of the database's own backends for this database (pg_stat_activity's
 * pids, from /proc; PostgreSQL's shared background writers are left out), so "requests per
 * core-second" is a figure a reader can scale to a larger machine.
 *
 * The servers are not pinned here: two workers on the one core pinning leaves them would measure
 * nothing. They share the machine's cores with the load generator, and the output says so.
 */
import pg from 'pg';
import { availableParallelism } from 'node:os';
import {
  backendCpu,
  backendDelta,
  machineCpuMicros,
  measure,
  median,
  startServer,
  treeCpuMicros,
  type Load,
} from './lib.js';
import { SCENARIOS } from './scenarios.js';

export interface WorkersFigures {
  lines: string[];
  json: Record<string, unknown>;
}

interface Side {
  workers: number;
  rps: number[];
  cpu: number[];
  dbCpu: number[];
  p99: number[];
  non2xx: number;
  /** Per round, the cores' worth of CPU used while it ran: by the whole machine, the server, its database backends, the load generator. */
  cores: { machine: number; server: number; db: number; load: number }[];
}

export async function runWorkers(
  store: string,
  env: Record<string, string>,
  pgUrls: [string, string] | null,
  bareUrl: string,
  opts: { seconds: number; rounds: number; ports: [number, number] },
): Promise<WorkersFigures> {
  // A paying account may hold 1,000 open upload sessions; the one-account scenario opens more.
  const common = { SVC_MAX_OPEN_UPLOADS: '100000000' };
  const one = await startServer(opts.ports[0], {
    ...common,
    ...env,
    ...(pgUrls ? { SVC_DATABASE_URL: pgUrls[0] } : {}),
  });
  const two = await startServer(
    opts.ports[1],
    { ...common, ...env, ...(pgUrls ? { SVC_DATABASE_URL: pgUrls[1] } : {}) },
    undefined,
    undefined,
    2,
  ).catch(async (err: unknown) => {
    await one.stop();
    throw err;
  });
  const clients = pgUrls ? pgUrls.map((url) => new pg.Client({ connectionString: url })) : null;
  for (const c of clients ?? []) await c.connect();
  const rows: { scenario: string; sides: Side[] }[] = [];
  try {
    for (const scenario of SCENARIOS) {
      const sides: (Side & { load: Load; pid: number; db: pg.Client | null })[] = [];
      for (const [i, server] of [one, two].entries()) {
        const { load } = await scenario.setup(server.url);
        sides.push({
          workers: i + 1,
          load,
          pid: server.pid,
          db: clients?.[i] ?? null,
          rps: [],
          cpu: [],
          dbCpu: [],
          p99: [],
          non2xx: 0,
          cores: [],
        });
      }
      if (scenario.warm) for (const side of sides) await measure({ ...side.load, seconds: 2 });
      for (let round = 0; round < opts.rounds; round++) {
        await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds });
        for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
          const before = treeCpuMicros(side.pid);
          const dbBefore = side.db ? await backendCpu(side.db) : null;
          const machineBefore = machineCpuMicros();
          const loadBefore = process.cpuUsage();
          const startedAt = process.hrtime.bigint();
          const f = await measure({ ...side.load, seconds: opts.seconds });
          const wallMicros = Number(process.hrtime.bigint() - startedAt) / 1000;
          const loadUsed = process.cpuUsage(loadBefore);
          const machineAfter = machineCpuMicros();
          const after = treeCpuMicros(side.pid);
          const dbAfter = side.db ? await backendCpu(side.db) : null;
          if (machineBefore && machineAfter && before !== null && after !== null) {
            // The machine's busy share, in cores: all of its cores busy reads as availableParallelism().
            const machine =
              ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) *
              availableParallelism();
            const db = dbBefore && dbAfter ? backendDelta(dbBefore, dbAfter) / wallMicros : 0;
            side.cores.push({
              machine,
              server: (after - before) / wallMicros,
              db,
              load: (loadUsed.user + loadUsed.system) / wallMicros,
            });
          }
          side.rps.push(f.rps);
          side.p99.push(f.p99);
          side.non2xx += f.non2xx + f.errors;
          if (before !== null && after !== null && f.ok > 0) side.cpu.push((after - before) / f.ok);
          if (dbBefore && dbAfter && f.ok > 0) side.dbCpu.push(backendDelta(dbBefore, dbAfter) / f.ok);
        }
      }
      rows.push({ scenario: scenario.name, sides });
    }
  } finally {
    for (const c of clients ?? []) await c.end();
    await Promise.all([one.stop(), two.stop()]);
  }
  const us = (xs: number[]) => (xs.length > 0 ? `${median(xs).toFixed(1)} µs` : '–');
  const coresOf = (side: Side, key: keyof Side['cores'][number]) =>
    side.cores.length > 0 ? median(side.cores.map((c) => c[key])).toFixed(2) : '–';
  const perCoreSecond = (xs: number[]) => (xs.length > 0 ? Math.round(1e6 / median(xs)).toLocaleString('en-US') : '–');
  const lines = [
    `${store}: one server process against SVC_WORKERS=2, ${opts.rounds} rounds of ${opts.seconds} s, each round after a bare-route run, the order alternating; medians. Servers unpinned, sharing the cores with the load generator. CPU per request: user + system time of the primary and its workers (and of this database's PostgreSQL backends), from /proc, per 2xx answer.`,
    '',
    `| scenario | 1 worker req/s | 2 workers req/s | 2 ÷ 1 | server CPU/req, 1 | server CPU/req, 2 | req per server core-second, 1 / 2 |${pgUrls ? ' PostgreSQL CPU/req, 1 / 2 |' : ''} p99 ms, 1 / 2 | non-2xx + errors |`,
    `|---|---:|---:|---:|---:|---:|---:|${pgUrls ? '---:|' : ''}---:|---:|`,
    ...rows.map(({ scenario, sides: [a, b] }) => {
      const ratio = median(b!.rps) / median(a!.rps);
      return (
        `| ${scenario} | ${Math.round(median(a!.rps))} | ${Math.round(median(b!.rps))} | ${ratio.toFixed(2)} | ${us(a!.cpu)} | ${us(b!.cpu)} | ${perCoreSecond(a!.cpu)} / ${perCoreSecond(b!.cpu)} |` +
        `${pgUrls ? ` ${us(a!.dbCpu)} / ${us(b!.dbCpu)} |` : ''} ${median(a!.p99)} / ${median(b!.p99)} | ${a!.non2xx} / ${b!.non2xx} |`
      );
    }),
    '',
    `Where the machine's ${availableParallelism()} cores went while each side ran (cores' worth of CPU, medians of the rounds): all of them busy means a second worker had no core to run on, whatever it could do on a larger machine.`,
    '',
    `| scenario | machine busy, 1 / 2 | server, 1 / 2 |${pgUrls ? ' PostgreSQL backends, 1 / 2 |' : ''} load generator, 1 / 2 |`,
    `|---|---:|---:|${pgUrls ? '---:|' : ''}---:|`,
    ...rows.map(
      ({ scenario, sides: [a, b] }) =>
        `| ${scenario} | ${coresOf(a!, 'machine')} / ${coresOf(b!, 'machine')} | ${coresOf(a!, 'server')} / ${coresOf(b!, 'server')} |` +
        `${pgUrls ? ` ${coresOf(a!, 'db')} / ${coresOf(b!, 'db')} |` : ''} ${coresOf(a!, 'load')} / ${coresOf(b!, 'load')} |`,
    ),
  ];
  return {
    lines,
    json: {
      store,
      rows: rows.map(({ scenario, sides }) => ({
        scenario,
        sides: sides.map((s) => ({
          workers: s.workers,
          rps: s.rps,
          server_cpu_us_per_request: s.cpu,
          db_cpu_us_per_request: s.dbCpu,
          p99_ms: s.p99,
          non_2xx_and_errors: s.non2xx,
          cores: s.cores,
        })),
      })),
    },
  };
}
