import type { Clock, DeploymentTotals, Logger, OperatorService } from '@strongroom/core';
import { failureForLog } from '../logs/failure.js';
import type { HttpMetrics } from './metrics.js';

/** How often the deployment's totals are counted: at most once per this interval. */
export const TOTALS_INTERVAL_MS = 60_000;

/** The gauges, by the field of core's DeploymentTotals each shows. */
const GAUGES: readonly [keyof DeploymentTotals, string, string][] = [
  ['accounts', 'strongroom_accounts', 'Accounts in the deployment.'],
  ['openSessions', 'strongroom_sessions_open', 'Sessions neither closed nor past an expiry.'],
  [
    'usedBytes',
    'strongroom_quota_used_bytes',
    'Quota used over every paying account: bytes charged plus bytes reserved by uploads in flight.',
  ],
  ['reservedBytes', 'strongroom_quota_reserved_bytes', 'Bytes reserved by upload sessions in flight.'],
  ['storedBlobs', 'strongroom_blobs_stored', 'Blobs in the ledger.'],
  ['storedBytes', 'strongroom_blobs_stored_bytes', 'Bytes of the blobs in the ledger.'],
  [
    'openUploads',
    'strongroom_uploads_open',
    'Upload sessions in flight (open and not expired), guest drops and federated fills included.',
  ],
];

/**
 * The deployment's totals as gauges. They are counted by a timer, at most once a minute, and a
 * scrape only reads the last count: a scrape never waits for the database, and many scrapes cost
 * one count. One process per deployment runs this (the single server, or worker 1 of SVC_WORKERS),
 * and the workers' scrapes are answered for all of them (workers.ts), so each total appears once.
 */
export class DeploymentGauges {
  readonly #d: {
    metrics: HttpMetrics;
    operator: Pick<OperatorService, 'totals'>;
    clock: Clock;
    logger: Logger;
    intervalMs: number;
  };
  #totals: DeploymentTotals | null = null;
  #countedAt: number | null = null;
  #counting: Promise<void> | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(deps: {
    metrics: HttpMetrics;
    operator: Pick<OperatorService, 'totals'>;
    clock: Clock;
    logger: Logger;
    intervalMs?: number;
  }) {
    this.#d = { ...deps, intervalMs: deps.intervalMs ?? TOTALS_INTERVAL_MS };
    for (const [field, name, help] of GAUGES) {
      deps.metrics.watch(name, help, 'gauge', () =>
        this.#totals === null ? [] : [{ labels: {}, value: this.#totals[field] }],
      );
    }
    deps.metrics.watch(
      'strongroom_deployment_totals_timestamp_seconds',
      'When the deployment totals were last counted (absent before the first count).',
      'gauge',
      () => (this.#countedAt === null ? [] : [{ labels: {}, value: Math.floor(this.#countedAt / 1000) }]),
    );
  }

  /**
   * Counts, unless a count is under way or the last one is less than the interval old by the clock.
   * A failed count keeps the last totals (and is logged); the next tick tries again.
   */
  tick(): Promise<void> {
    if (this.#counting !== null) return this.#counting;
    if (this.#countedAt !== null && this.#d.clock.now() - this.#countedAt < this.#d.intervalMs)
      return Promise.resolve();
    const counting = this.#d.operator
      .totals()
      .then((totals) => {
        this.#totals = totals;
        this.#countedAt = this.#d.clock.now();
      })
      .catch((error: unknown) => this.#d.logger.warn('metrics.totals_failed', { error: failureForLog(error) }))
      .finally(() => {
        this.#counting = null;
      });
    this.#counting = counting;
    return counting;
  }

  /** Counts now, then on every interval; the timer never holds the process open. */
  start(): void {
    void this.tick();
    this.#timer = setInterval(() => void this.tick(), this.#d.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
