import { join } from 'node:path';
import type { Clock, Logger, UploadService } from '@strongroom/core';
import { LockHeldError, takeFileLock } from '@strongroom/adapters-node';

/** The lock file, in SVC_DATA_DIR, that makes the staging sweep one process at a time. */
export const STAGING_SWEEP_LOCK = 'staging-sweep.lock';

/** What one tick did: swept (how many staged objects went), or skipped because another process holds the lock. */
export type StagingSweepOutcome = { readonly outcome: 'swept'; readonly discarded: number } | { readonly outcome: 'skipped'; readonly reason: string };

/**
 * The server's staging sweep (SVC_STAGING_SWEEP_S): every so often it removes staged bytes of upload
 * sessions that are no longer open (UploadService.sweepStaging, which asks core which sessions are),
 * so bytes a client sent through a presigned URL after its session was cancelled, expired or
 * finalized stay no longer than one interval. One process at a time: whoever holds the lock file in
 * the data directory sweeps, the others skip that tick (every process of a deployment that shares
 * the directory runs this timer, so one that dies hands the work to the next).
 */
export class StagingSweeper {
  #timer: NodeJS.Timeout | null = null;
  #running = false;

  constructor(private readonly d: { uploads: Pick<UploadService, 'sweepStaging'>; dataDir: string; intervalMs: number; clock: Clock; logger: Logger }) {}

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
      let lock;
      try {
        lock = await takeFileLock(join(this.d.dataDir, STAGING_SWEEP_LOCK), 'staging sweep', this.d.clock.now());
      } catch (err) {
        if (err instanceof LockHeldError) return { outcome: 'skipped', reason: err.message };
        throw err;
      }
      try {
        const discarded = await this.d.uploads.sweepStaging();
        if (discarded > 0) this.d.logger.info('staging.swept', { discarded });
        return { outcome: 'swept', discarded };
      } finally {
        await lock.release();
      }
    } catch (err) {
      this.d.logger.error('staging.sweep_failed', { error: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      this.#running = false;
    }
  }
}
