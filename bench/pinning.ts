import { execFileSync } from 'node:child_process';

/**
 * CPU pinning for the bench: the load generator (this process) on one core, the servers under
 * test on the others, so the two stop trading places on the same core between rounds. Uses
 * `taskset` from util-linux; where it is missing, or fewer than two cores are allowed to this
 * process, nothing is pinned and the report says so.
 */
export interface Pinning {
  /** Prepended to a server's command line (empty when not pinning). */
  readonly serverPrefix: string[];
  /** The cores the servers run on (every allowed core when not pinning). */
  readonly serverCores: string;
  /** One line for the bench's output. */
  readonly description: string;
}

/** The cores this process may run on, from `taskset -cp`, or null when taskset is unavailable. */
function allowedCores(): number[] | null {
  try {
    const out = execFileSync('taskset', ['-cp', String(process.pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const list = out.split(':').pop()!.trim();
    const cores: number[] = [];
    for (const part of list.split(',')) {
      const [a, b] = part.split('-').map(Number);
      if (a === undefined || Number.isNaN(a)) continue;
      for (let c = a; c <= (b ?? a); c++) cores.push(c);
    }
    return cores;
  } catch {
    return null;
  }
}

export function pinCores(disabled = process.env.BENCH_PIN === '0', why = 'BENCH_PIN=0'): Pinning {
  const cores = allowedCores();
  const all = cores?.join(',') ?? 'all';
  if (disabled) return { serverPrefix: [], serverCores: all, description: `pinning: off (${why})` };
  if (cores === null)
    return {
      serverPrefix: [],
      serverCores: all,
      description: 'pinning: none (taskset not found; install util-linux to pin)',
    };
  if (cores.length < 2)
    return {
      serverPrefix: [],
      serverCores: all,
      description: `pinning: none (only core ${all} allowed to this process)`,
    };
  const generator = cores[0]!;
  const servers = cores.slice(1).join(',');
  try {
    // -a: every thread of this process (libuv's pool and V8's helpers already exist).
    execFileSync('taskset', ['-a', '-cp', String(generator), String(process.pid)], { stdio: 'ignore' });
  } catch (err) {
    return {
      serverPrefix: [],
      serverCores: all,
      description: `pinning: none (taskset refused: ${(err as Error).message.split('\n')[0]})`,
    };
  }
  return {
    serverPrefix: ['taskset', '-c', servers],
    serverCores: servers,
    description: `pinning: load generator on core ${generator}, servers and bare route on core${cores.length > 2 ? 's' : ''} ${servers} (taskset)`,
  };
}
