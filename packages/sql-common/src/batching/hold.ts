import type { HandleLoad } from './load.js';

/**
 * Whether a queued batch waits another turn of the event loop for more calls to join it. A commit
 * (and, under it, a WAL flush) or a round trip to PostgreSQL costs about the same for one call as
 * for fifty, so a loaded server does better to let a batch fill while it serves other requests.
 * The batch waits only while new calls keep arriving on the handle, only while it has room, and
 * never longer than `holdMs` after its first call; an idle process passes it on at the next turn.
 */
export class BatchHold {
  /** When the queue's first call arrived, and the handle's arrivals at the last look. */
  #since = 0;
  #seen = 0;

  constructor(
    readonly load: HandleLoad,
    private readonly holdMs = 0,
  ) {}

  /** A call was queued (and counted as an arrival); `first`: the queue was empty before it. */
  queued(first: boolean): void {
    // Only a queue that holds needs to know when its first call came.
    if (first && this.holdMs > 0) {
      this.#since = performance.now();
      this.#seen = this.load.arrivals;
    }
  }

  /** Wait another turn? `queued` calls are waiting, at most `maxBatch` go in one batch. */
  holding(queued: number, maxBatch: number): boolean {
    if (this.holdMs <= 0) return false;
    if (this.load.arrivals === this.#seen || queued >= maxBatch) return false;
    if (performance.now() - this.#since >= this.holdMs) return false;
    this.#seen = this.load.arrivals;
    return true;
  }
}

/**
 * How long a loaded server holds a batch (ms): SQLite's write batches (a commit and its WAL flush
 * each) and PostgreSQL's session reads and hot writes (a round trip each). On SQLite a held batch
 * shares one fsync among more writes, whose CPU cost on virtual disks is far above the statements';
 * on PostgreSQL it shares one round trip, whose socket calls and backend wake-up cost more than the
 * lookup. An answer waits at most this much more, and only while other requests keep coming.
 * SQLite's reads do not hold: one more read in a batch saves nothing there, as it is a call into the
 * same process. (The bench notes and the commit that set it carry the figures.)
 */
export const BATCH_HOLD_MS = 2;
