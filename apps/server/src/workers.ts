import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from '@strongroom/core';

/**
 * Several server processes on one port (`SVC_WORKERS`, docs/api.md "Worker processes"). The
 * primary does what must happen once (checks, migrations, keys: see main.ts), then forks the
 * workers, which run main.ts again as cluster workers and share its listening socket. The primary
 * hands each new connection to the next worker in turn (node:cluster's round-robin; Node 20 has
 * no `reusePort`), so a kept-alive connection stays with one worker and the primary does nothing
 * per request. Every rule the workers enforce lives in the database they share, exactly as for
 * separate servers: nothing here decides anything about a request.
 */

/**
 * What the primary tells a worker: drain (as on SIGTERM), cut what is still in flight, or the
 * answer to a metrics scrape the worker asked for.
 */
export type WorkerMessage =
  | { readonly type: 'stop'; readonly signal: string }
  | { readonly type: 'cut' }
  | { readonly type: 'metrics:answer'; readonly id: number; readonly text?: string; readonly error?: string };

/** What a worker asks the primary: the metrics of every worker, for a scrape it received. */
type WorkerRequest = { readonly type: 'metrics:scrape'; readonly id: number };

/** How long a worker waits for the primary's aggregated metrics (prom-client waits 5 s for the workers). */
const SCRAPE_WAIT_MS = 6_000;

/** The exit status of a process whose durable write failed (EX_IOERR); see main.ts. */
export const DURABILITY_LOST_EXIT = 74;

/**
 * Forks `count` workers and supervises them until they are all gone, then exits:
 * - SIGTERM or SIGINT: every worker drains as a single server does; a second signal cuts what is
 *   still in flight. Exits 0 when every worker stopped cleanly.
 * - A worker that exits when nobody asked it to is not restarted: the others drain and the
 *   primary exits with the worker's status (1 if it had none), so the supervisor that restarts a
 *   single server restarts this one, and a crash is never hidden behind a quiet respawn.
 * - A worker that lost durability (74) takes the others down at once (SIGKILL): a clean close of
 *   the last SQLite connection would checkpoint a WAL that can no longer be trusted.
 */
export function superviseWorkers(count: number, logger: Logger): void {
  // Must be set before the first fork. Round-robin is Node's default on Linux already; the
  // operating system's own choice (SCHED_NONE) leaves most connections to one busy worker.
  cluster.schedulingPolicy = cluster.SCHED_RR;
  const workers = new Set<Worker>();
  /** The primary's exit status once it is stopping; null while it serves. */
  let status: number | null = null;
  const tell = (worker: Worker, message: WorkerMessage) => {
    try {
      worker.send(message);
    } catch {
      /* already gone: its 'exit' comes next */
    }
  };
  // One scrape answers for every worker: the worker that received it asks here, and prom-client's
  // aggregator collects every worker's registries over IPC and sums the families (counters and
  // histograms add up; a total that one worker counts appears once).
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: WorkerRequest) => {
    if (message?.type !== 'metrics:scrape') return;
    aggregator.clusterMetrics().then(
      (text) => tell(worker, { type: 'metrics:answer', id: message.id, text }),
      (error: unknown) =>
        tell(worker, { type: 'metrics:answer', id: message.id, error: String((error as Error)?.message ?? error) }),
    );
  });
  for (let i = 0; i < count; i++) workers.add(cluster.fork());
  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker);
    const own = code ?? 1;
    const exited = { worker: worker.id, pid: worker.process.pid, code, signal };
    if (status === null) {
      logger.error('worker.exited', exited);
      status = own === 0 ? 1 : own;
      if (own === DURABILITY_LOST_EXIT) for (const other of workers) other.process.kill('SIGKILL');
      else for (const other of workers) tell(other, { type: 'stop', signal: 'worker_exit' });
    } else {
      logger.info('worker.exited', exited);
      if (status === 0 && own !== 0 && signal === null) status = own;
    }
    if (workers.size === 0) process.exit(status);
  });
  const stop = (signal: string) => {
    if (status !== null) {
      for (const worker of workers) tell(worker, { type: 'cut' });
      return;
    }
    status = 0;
    logger.info('server.stopping', { signal, workers: workers.size });
    for (const worker of workers) tell(worker, { type: 'stop', signal });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * In a worker: calls `stop` when the primary says so, or when the primary is gone (a worker whose
 * primary was killed would otherwise serve on with nobody to stop it). Set up before the server
 * listens; a stop asked before then waits for `ready`.
 */
export function followPrimary(): { ready(stop: (signal: string, cut: boolean) => void): void } {
  let asked: { signal: string; cut: boolean } | null = null;
  let handler: ((signal: string, cut: boolean) => void) | null = null;
  const ask = (signal: string, cut: boolean) => {
    if (handler) handler(signal, cut);
    else asked = { signal, cut: asked?.cut === true || cut };
  };
  process.on('message', (message: WorkerMessage) => {
    if (message?.type === 'stop') ask(message.signal, false);
    else if (message?.type === 'cut') ask('cut', true);
  });
  process.on('disconnect', () => ask('primary_gone', false));
  return {
    ready(stop) {
      handler = stop;
      if (asked) stop(asked.signal, asked.cut);
    },
  };
}

/**
 * In a worker: offers `registries` to the primary's aggregator, and returns the scrape that asks the
 * primary for every worker's metrics (what /metrics answers with under SVC_WORKERS).
 */
export function metricsThroughPrimary(registries: Registry[]): () => Promise<string> {
  // Constructing one in a worker adds prom-client's listener that answers the primary's requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries(registries);
  let next = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: WorkerMessage) => {
    if (message?.type !== 'metrics:answer') return;
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(`metrics from the workers: ${message.error}`));
    else waiter?.resolve(message.text ?? '');
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary did not answer a metrics scrape'));
      }, SCRAPE_WAIT_MS);
      waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send!({ type: 'metrics:scrape', id } satisfies WorkerRequest);
    });
}
