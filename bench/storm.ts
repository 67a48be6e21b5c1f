/**
 * The login-storm mode: in each round, the authenticated GET alone, then the same GET while 20
 * clients sign in continuously (argon2id at the production parameters, the server's own hasher),
 * then the sign-ins alone, then the hasher alone in a process on the server's cores. The medians answer two questions:
 * does the GET's p99 stay within 2x of its p99 alone, and do sign-ins reach 80 % of what the hasher
 * does by itself on the same cores.
 *
 * Then the flood (300 concurrent sign-ins that ignore Retry-After): in each round,
 * 300 connections (from a process of their own, flood.ts, on the load generator's core; they
 * ignore Retry-After, as a flood does) sign in as fast as they are answered while one legitimate client signs in, one
 * request at a time, and the authenticated GET runs beside them. It reports the legitimate
 * sign-in's p50/p99 (every answer it got, 503s included) and how many of its tries were shed, the
 * flood's answers by status (503 error.server.busy is the shed count), and the GET's p99 and
 * failures (nothing but sign-ins may be refused).
 */
import { spawn } from 'node:child_process';
import { measure, PASSWORD, register, spawnNode, VERSION, type Figures, median } from './lib.js';

export interface StormFigures {
  lines: string[];
  json: Record<string, unknown>;
}

const SIGN_IN_CLIENTS = 20;
const FLOOD_CLIENTS = 300;
/**
 * The flood comes from this many client addresses (127.0.0.2 and up; the legitimate client is
 * 127.0.0.1), as an attack from many machines would: the hasher's queue serves client addresses
 * round-robin, so the legitimate sign-in waits about one check per flooding address, not behind
 * the whole flood. BENCH_FLOOD_SOURCES=0 floods from the legitimate client's own address.
 */
const FLOOD_SOURCES = Number(process.env.BENCH_FLOOD_SOURCES ?? 30);

/** argon2id verifications per second in a process of its own on the server's cores. */
async function hasherAlone(seconds: number): Promise<number> {
  const child = spawnNode(['--import', 'tsx', 'bench/hasher-alone.ts'], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...process.env, HASH_SECONDS: String(seconds), HASH_CONCURRENCY: String(SIGN_IN_CLIENTS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`hasher-alone exited with ${code}`);
  const r = JSON.parse(out.trim().split('\n').pop()!) as { verifies: number; seconds: number };
  return r.verifies / r.seconds;
}

/** The flood, from a process of its own on the load generator's core (see flood.ts). */
async function floodFrom(url: string, addresses: string[], seconds: number): Promise<Figures> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/flood.ts'], {
    cwd: new URL('..', import.meta.url).pathname,
    env: {
      ...process.env,
      FLOOD_URL: url,
      FLOOD_ADDRESSES: JSON.stringify(addresses),
      FLOOD_CONNECTIONS: String(FLOOD_CLIENTS),
      FLOOD_SECONDS: String(seconds),
      FLOOD_SOURCES: String(FLOOD_SOURCES),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`flood exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop()!) as Figures;
}

export async function runStorm(
  url: string,
  store: string,
  serverPrefix: string[],
  opts: { seconds: number; rounds: number },
): Promise<StormFigures> {
  const stamp = Date.now();
  const reader = await register(url, `bench-storm-read-${stamp}@example.org`);
  const addresses: string[] = [];
  for (let i = 0; i < SIGN_IN_CLIENTS; i++) {
    addresses.push(`bench-storm-${stamp}-${i}@example.org`);
    await register(url, addresses[i]!);
  }
  const get = {
    url: `${url}/v1/auth/profile`,
    headers: { authorization: `Bearer ${reader.access_token}`, 'x-svc-protocol': VERSION },
  };
  // Each sign-in names the next of the 20 accounts in turn.
  let next = 0;
  const signIns = {
    url: `${url}/v1/auth/login`,
    connections: SIGN_IN_CLIENTS,
    requests: [
      {
        method: 'POST',
        path: '/v1/auth/login',
        headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
        setupRequest: (req: Record<string, unknown>) => ({
          ...req,
          body: JSON.stringify({ address: addresses[next++ % addresses.length], password: PASSWORD }),
        }),
      },
    ],
  };
  await measure({ ...get, seconds: 2 });

  const legitimate = `bench-storm-legit-${stamp}@example.org`;
  await register(url, legitimate);
  const legitSignIn = {
    url: `${url}/v1/auth/login`,
    method: 'POST' as const,
    connections: 1,
    headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
    body: JSON.stringify({ address: legitimate, password: PASSWORD }),
  };
  const legitAlone = await measure({ ...legitSignIn, seconds: opts.seconds });

  const rounds: { alone: Figures; during: Figures; storm: Figures; signInsAlone: Figures; hasher: number }[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    const alone = await measure({ ...get, seconds: opts.seconds });
    const [during, storm] = await Promise.all([
      measure({ ...get, seconds: opts.seconds }),
      measure({ ...signIns, seconds: opts.seconds }),
    ]);
    const signInsAlone = await measure({ ...signIns, seconds: opts.seconds });
    const hasher = await hasherAlone(opts.seconds);
    rounds.push({ alone, during, storm, signInsAlone, hasher });
  }
  const floods: { flood: Figures; legit: Figures; get: Figures }[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    const [flood, legit, get_] = await Promise.all([
      floodFrom(url, addresses, opts.seconds),
      measure({ ...legitSignIn, seconds: opts.seconds }),
      measure({ ...get, connections: 5, seconds: opts.seconds }),
    ]);
    floods.push({ flood, legit, get: get_ });
    // Let the queue drain before the next round: a flood's leftovers are not the next round's load.
    await new Promise((r) => setTimeout(r, 2_000));
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const shed = (f: Figures) => f.statuses['503'] ?? 0;
  const floodShed = sum(floods.map((f) => shed(f.flood)));
  const floodAnswered = sum(floods.map((f) => f.flood.ok));
  const legitTries = sum(floods.map((f) => f.legit.ok + f.legit.non2xx));
  const legitShed = sum(floods.map((f) => shed(f.legit)));
  const floodOther = sum(floods.map((f) => f.flood.non2xx - shed(f.flood) + f.flood.errors));
  const getFailures = sum(floods.map((f) => f.get.non2xx + f.get.errors));
  const p99Alone = median(rounds.map((r) => r.alone.p99));
  const p99During = median(rounds.map((r) => r.during.p99));
  const signInRate = median(rounds.map((r) => r.storm.ok / r.storm.duration));
  const signInAloneRate = median(rounds.map((r) => r.signInsAlone.ok / r.signInsAlone.duration));
  const hasherRate = median(rounds.map((r) => r.hasher));
  const aloneShare = signInAloneRate / hasherRate;
  const p99Factor = p99During / Math.max(p99Alone, 1);
  const hashShare = signInRate / hasherRate;
  const failures = rounds.reduce(
    (n, r) =>
      n +
      r.storm.errors +
      r.storm.non2xx +
      r.signInsAlone.errors +
      r.signInsAlone.non2xx +
      r.during.errors +
      r.during.non2xx +
      r.alone.errors +
      r.alone.non2xx,
    0,
  );
  const cores = serverPrefix.length > 0 ? `cores ${serverPrefix[serverPrefix.length - 1]}` : 'unpinned';
  const lines = [
    `login storm on ${store}: ${opts.rounds} rounds of ${opts.seconds} s, medians (server and hasher ${cores}, ${SIGN_IN_CLIENTS} sign-in clients)`,
    '| figure | value | target |',
    '|---|---:|---|',
    `| GET /v1/auth/profile p99 alone | ${p99Alone} ms | |`,
    `| GET /v1/auth/profile p99 during the storm | ${p99During} ms (${p99Factor.toFixed(2)}x) | <= 2x${p99Factor > 2 ? ' MISSED' : ''} |`,
    `| GET req/s alone / during | ${Math.round(median(rounds.map((r) => r.alone.rps)))} / ${Math.round(median(rounds.map((r) => r.during.rps)))} | |`,
    `| sign-ins/s during the storm (2xx) | ${signInRate.toFixed(1)} | |`,
    `| sign-ins/s alone (2xx) | ${signInAloneRate.toFixed(1)} | |`,
    `| argon2id verifications/s, hasher alone | ${hasherRate.toFixed(1)} | |`,
    `| sign-ins alone ÷ hasher alone | ${(aloneShare * 100).toFixed(1)} % | >= 80 %${aloneShare < 0.8 ? ' MISSED' : ''} |`,
    `| sign-ins during the storm ÷ hasher alone | ${(hashShare * 100).toFixed(1)} % | >= 80 %${hashShare < 0.8 ? ' MISSED' : ''} |`,
    `| errors and non-2xx (all loads) | ${failures} | 0 |`,
    '',
    `sign-in flood on ${store}: ${opts.rounds} rounds of ${opts.seconds} s, ${FLOOD_CLIENTS} connections signing in from ${FLOOD_SOURCES || "the legitimate client's"} client addresses, one legitimate client signing in one request at a time, the authenticated GET on 5 connections; medians of the rounds`,
    '| figure | value |',
    '|---|---:|',
    `| legitimate sign-in alone: p50 / p99 | ${legitAlone.p50} / ${legitAlone.p99} ms |`,
    `| legitimate sign-in during the flood: p50 / p99 (every answer, 503s included) | ${median(floods.map((f) => f.legit.p50))} / ${median(floods.map((f) => f.legit.p99))} ms |`,
    `| legitimate sign-ins shed (503 error.server.busy) / tries | ${legitShed} / ${legitTries} |`,
    `| flood sign-ins answered 200 / shed 503 / anything else | ${floodAnswered} / ${floodShed} / ${floodOther} |`,
    `| GET /v1/auth/profile p99 alone / during the flood | ${p99Alone} / ${median(floods.map((f) => f.get.p99))} ms |`,
    `| GET /v1/auth/profile refused or failed during the flood | ${getFailures} (target 0) |`,
  ];
  return {
    lines,
    json: {
      store,
      get_p99_alone_ms: p99Alone,
      get_p99_during_ms: p99During,
      p99_factor: p99Factor,
      sign_ins_per_s: signInRate,
      sign_ins_alone_per_s: signInAloneRate,
      hasher_verifies_per_s: hasherRate,
      sign_in_share_of_hasher: hashShare,
      sign_in_alone_share_of_hasher: aloneShare,
      failures,
      flood: {
        clients: FLOOD_CLIENTS,
        sources: FLOOD_SOURCES,
        legit_alone: { p50_ms: legitAlone.p50, p99_ms: legitAlone.p99 },
        legit_shed: legitShed,
        legit_tries: legitTries,
        flood_answered: floodAnswered,
        flood_shed: floodShed,
        flood_other: floodOther,
        get_failures: getFailures,
        rounds: floods.map((f) => ({
          legit_p50_ms: f.legit.p50,
          legit_p99_ms: f.legit.p99,
          legit_statuses: f.legit.statuses,
          flood_statuses: f.flood.statuses,
          get_p99_ms: f.get.p99,
        })),
      },
      rounds: rounds.map((r) => ({
        get_alone: { rps: r.alone.rps, p50_ms: r.alone.p50, p99_ms: r.alone.p99 },
        get_during: { rps: r.during.rps, p50_ms: r.during.p50, p99_ms: r.during.p99 },
        sign_ins_per_s: r.storm.ok / r.storm.duration,
        sign_ins_alone_per_s: r.signInsAlone.ok / r.signInsAlone.duration,
        hasher_verifies_per_s: r.hasher,
      })),
    },
  };
}
