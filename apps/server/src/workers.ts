import cluster, { type Worker } from 'node:cluster';
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

/** What the primary tells a worker: drain (as on SIGTERM), or cut what is still in flight. */
export type WorkerMessage = { readonly type: 'stop'; readonly signal: string } | { readonly type: 'cut' };

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
