/**
 * Calls handed to one database handle's queues so far: every read and write queued adds one. A
 * hold that sees this move between two looks knows requests are still coming in.
 */
export class Arrivals {
  count = 0;
}

const handleArrivals = new WeakMap<object, Arrivals>();
/** The arrivals of one database handle (a SQLite connection, a PostgreSQL pool), shared by every queue over it. */
export function arrivalsOf(handle: object): Arrivals {
  let a = handleArrivals.get(handle);
  if (a === undefined) handleArrivals.set(handle, (a = new Arrivals()));
  return a;
}

/**
 * Whether a queued batch waits another turn of the event loop for more calls to join it. A commit
 * (and, under it, a WAL flush) or a round trip to PostgreSQL costs about the same for one call as
 * for fifty, so a loaded server does better to let a batch fill while it serves other requests.
 * The batch waits only while new calls keep arriving on the handle, only while it has room, and
 * never longer than `holdMs` after its first call; an idle process passes it on at the next turn.
 */
export class BatchHold {
  /** When the queue's first call arrived, and the arrivals count at the last look. */
  #since = 0;
  #seen = 0;

  constructor(
    readonly arrivals: Arrivals | null,
    private readonly holdMs = 0,
  ) {}

  /** Records a call being queued; `first`: the queue was empty before it. */
  arrived(first: boolean): void {
    if (this.arrivals === null) return;
    this.arrivals.count++;
    // Only a queue that holds needs to know when its first call came; the others only count.
    if (first && this.holdMs > 0) {
      this.#since = performance.now();
      this.#seen = this.arrivals.count;
    }
  }

  /** Wait another turn? `queued` calls are waiting, at most `maxBatch` go in one batch. */
  holding(queued: number, maxBatch: number): boolean {
    const arrivals = this.arrivals;
    if (arrivals === null || this.holdMs <= 0) return false;
    if (arrivals.count === this.#seen || queued >= maxBatch) return false;
    if (performance.now() - this.#since >= this.holdMs) return false;
    this.#seen = arrivals.count;
    return true;
  }
}

/**
 * How long a loaded server holds a batch (ms): SQLite's write batches (a commit and its WAL flush
 * each) and PostgreSQL's session reads and hot writes (a round trip each).
 * - SQLite, the bench's mixed load (about one write in ten, so most groups had carried one write):
 *   an fsync on those virtual disks cost the server about 300 µs of CPU. Holding for 2 ms cut
 *   fsyncs from about 900 to about 250 a second and server CPU per request by a fifth.
 * - PostgreSQL, the authenticated GET: each round trip costs socket calls on both ends and a wake-up
 *   of a backend that shares the server's cores. Holding the session reads cut server CPU per
 *   request by about a sixth.
 * An answer waits at most these 2 ms more. SQLite's reads do not hold: one more read in a batch
 * saves nothing there, as it is a call into the same process.
 */
export const BATCH_HOLD_MS = 2;
