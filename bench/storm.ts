/**
 * The login-storm mode: in each round, the authenticated GET alone, then the same GET while 20
 * clients sign in continuously (argon2id at the production parameters, the server's own hasher),
 * then the sign-ins alone, then the hasher alone in a process on the server's cores. The medians answer two questions:
 * does the GET's p99 stay within 2x of its p99 alone, and do sign-ins reach 80 % of what the hasher
 * does by itself on the same cores.
 */
import { measure, PASSWORD, register, spawnNode, VERSION, type Figures, median } from './lib.js';

export interface StormFigures {
  lines: string[];
  json: Record<string, unknown>;
}

const SIGN_IN_CLIENTS = 20;

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

export async function runStorm(url: string, store: string, serverPrefix: string[], opts: { seconds: number; rounds: number }): Promise<StormFigures> {
  const stamp = Date.now();
  const reader = await register(url, `bench-storm-read-${stamp}@example.org`);
  const addresses: string[] = [];
  for (let i = 0; i < SIGN_IN_CLIENTS; i++) {
    addresses.push(`bench-storm-${stamp}-${i}@example.org`);
    await register(url, addresses[i]!);
  }
  const get = { url: `${url}/v1/auth/profile`, headers: { authorization: `Bearer ${reader.access_token}`, 'x-svc-protocol': VERSION } };
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
        setupRequest: (req: Record<string, unknown>) => ({ ...req, body: JSON.stringify({ address: addresses[next++ % addresses.length], password: PASSWORD }) }),
      },
    ],
  };
  await measure({ ...get, seconds: 2 });

  const rounds: { alone: Figures; during: Figures; storm: Figures; signInsAlone: Figures; hasher: number }[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    const alone = await measure({ ...get, seconds: opts.seconds });
    const [during, storm] = await Promise.all([measure({ ...get, seconds: opts.seconds }), measure({ ...signIns, seconds: opts.seconds })]);
    const signInsAlone = await measure({ ...signIns, seconds: opts.seconds });
    const hasher = await hasherAlone(opts.seconds);
    rounds.push({ alone, during, storm, signInsAlone, hasher });
  }
  const p99Alone = median(rounds.map((r) => r.alone.p99));
  const p99During = median(rounds.map((r) => r.during.p99));
  const signInRate = median(rounds.map((r) => r.storm.ok / r.storm.duration));
  const signInAloneRate = median(rounds.map((r) => r.signInsAlone.ok / r.signInsAlone.duration));
  const hasherRate = median(rounds.map((r) => r.hasher));
  const aloneShare = signInAloneRate / hasherRate;
  const p99Factor = p99During / Math.max(p99Alone, 1);
  const hashShare = signInRate / hasherRate;
  const failures = rounds.reduce((n, r) => n + r.storm.errors + r.storm.non2xx + r.signInsAlone.errors + r.signInsAlone.non2xx + r.during.errors + r.during.non2xx + r.alone.errors + r.alone.non2xx, 0);
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
