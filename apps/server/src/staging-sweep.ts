import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock, LeaseStore, Logger, UploadService } from '@strongroom/core';

/** The lease, in the database, that makes the staging sweep one process at a time. */
export const STAGING_SWEEP_LEASE = 'staging-sweep';

/** What one tick did: swept (how many staged objects went), or skipped because another process holds the lease. */
export type StagingSweepOutcome =
  | { readonly outcome: 'swept'; readonly discarded: number }
  | { readonly outcome: 'skipped'; readonly reason: string };

/**
 * The server's staging sweep (SVC_STAGING_SWEEP_S): every so often it removes staged bytes of upload
 * sessions that are no longer open (UploadService.sweepStaging, which asks core which sessions are),
 * so bytes a client sent through a presigned URL after its session was cancelled, expired or
 * finalized stay no longer than one interval. Every process of a deployment runs the timer; a lease
 * in the database (operations/lease.ts) lets one of them, on any host, sweep at a time, and a
 * process that dies mid-sweep hands the lease on once it lapses (one interval).
 */
export class StagingSweeper {
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  /** This process, as the lease names its holder (never reused by another process). */
  readonly #holder = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;

  constructor(
    private readonly d: {
      uploads: Pick<UploadService, 'sweepStaging'>;
      leases: LeaseStore;
      intervalMs: number;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  start(): void {
    // A failed tick is logged by tick itself; the next one tries again.
    this.#timer = setInterval(() => void this.tick().catch(() => undefined), this.d.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async tick(): Promise<StagingSweepOutcome> {
    if (this.#running) return { outcome: 'skipped', reason: 'a sweep of this process is still running' };
    this.#running = true;
    try {
      // Held for an interval at most: a holder that died leaves it to the next tick after that.
      if (!(await this.d.leases.takeLease(STAGING_SWEEP_LEASE, this.#holder, this.d.clock.now(), this.d.intervalMs))) {
        return { outcome: 'skipped', reason: 'another process holds the staging sweep' };
      }
      try {
        const discarded = await this.d.uploads.sweepStaging();
        if (discarded > 0) this.d.logger.info('staging.swept', { discarded });
        return { outcome: 'swept', discarded };
      } finally {
        await this.d.leases.releaseLease(STAGING_SWEEP_LEASE, this.#holder);
      }
    } catch (err) {
      this.d.logger.error('staging.sweep_failed', { error: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      this.#running = false;
    }
  }
}
