import { guard, type Result } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { DeprecationStore } from '../ports/deprecation-store.js';
import type { Logger } from '../ports/logger.js';
import {
  decideAnnouncement,
  type AnnounceRefusal,
  type DeprecationAnnouncement,
  type DeprecationPolicy,
} from './deprecation.js';

export interface DeprecationServiceOptions {
  readonly store: DeprecationStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly policy: DeprecationPolicy;
}

/**
 * Deprecation announcements for the hot path of every request, without a database read per
 * request and without a job.
 *
 * Why a cached list is exact: an announcement made at instant A takes effect no earlier than
 * A + notice (decideAnnouncement refuses anything sooner). A list read at L therefore holds every
 * announcement that can be in effect before L + notice: any one missing from it was made after L.
 * So the window computed from time and the cached list is the true window as long as the list is
 * younger than the notice period. We re-read in the background once the list is `refreshMs` old
 * (at most a minute, so new announcements reach the records and the Deprecation/Sunset headers
 * quickly), and only past `trustMs` (half the notice period: the other half absorbs clock skew
 * between processes and a stalled database) does a request wait for the re-read; if that fails the
 * request fails rather than be judged by a list that might miss an announcement now in force.
 */
export class DeprecationService {
  readonly #o: DeprecationServiceOptions;
  readonly refreshMs: number;
  readonly trustMs: number;
  #list: readonly DeprecationAnnouncement[] = [];
  #loadedAt = -Infinity;
  #loading: Promise<readonly DeprecationAnnouncement[]> | null = null;
  #generation = 0;
  /** After a failed background re-read, the next one waits this long (a down database is not hammered). */
  #retryAt = -Infinity;

  constructor(options: DeprecationServiceOptions) {
    this.#o = options;
    this.refreshMs = Math.max(1, Math.min(60_000, Math.floor(options.policy.noticeMs / 4)));
    this.trustMs = Math.max(1, Math.floor(options.policy.noticeMs / 2));
  }

  get policy(): DeprecationPolicy {
    return this.#o.policy;
  }

  /** When the cached list was read (ms), for computing how long a decision from it holds. */
  get loadedAt(): number {
    return this.#loadedAt;
  }

  /** Counts completed re-reads, so whatever was derived from an older list knows to recompute. */
  get generation(): number {
    return this.#generation;
  }

  /** Reads the list from the store (one read at a time; callers arriving meanwhile share it). */
  refresh(): Promise<readonly DeprecationAnnouncement[]> {
    if (this.#loading) return this.#loading;
    const started = this.#o.clock.now();
    const loading = guard('error.store.unavailable', 'reading deprecation announcements', () =>
      this.#o.store.listDeprecations(),
    ).then((list) => {
      // Stamped with the instant the read began: anything announced after it is not in the list.
      this.#list = list;
      this.#loadedAt = Math.max(this.#loadedAt, started);
      this.#generation++;
      return list;
    });
    this.#loading = loading;
    void loading.then(
      () => void (this.#loading = null),
      () => void (this.#loading = null),
    );
    return loading;
  }

  /**
   * The cached list when it decides `now` exactly, starting a background re-read when it is due;
   * null when it is too old to trust (the caller awaits `current`).
   */
  cached(now: number): readonly DeprecationAnnouncement[] | null {
    const age = now - this.#loadedAt;
    if (age >= this.refreshMs && this.#loading === null && now >= this.#retryAt) {
      this.refresh().catch((err: unknown) => {
        this.#retryAt = this.#o.clock.now() + this.refreshMs;
        this.#o.logger.warn('deprecations.refresh_failed', {
          error: String((err as Error)?.cause ?? (err as Error)?.message ?? err),
        });
      });
    }
    return age < this.trustMs ? this.#list : null;
  }

  /** The list that decides `now`: the cache when it can, else a fresh read. */
  async current(now: number): Promise<readonly DeprecationAnnouncement[]> {
    return this.cached(now) ?? (await this.refresh());
  }

  /**
   * Announces that from `effectiveAt` the Min is `version`. Refused (nothing stored) when it is
   * sooner than the notice period, names no real version or one above Max, or raises nothing.
   */
  async announce(version: string, effectiveAt: number): Promise<Result<DeprecationAnnouncement, AnnounceRefusal>> {
    const candidate = { minProtocolVersion: version, effectiveAt, announcedAt: this.#o.clock.now() };
    // Judged here first for a clear message without a write; the store judges again in its transaction.
    const early = decideAnnouncement(await this.refresh(), candidate, this.#o.policy);
    if (!early.ok) return early;
    const r = await guard('error.store.unavailable', 'recording a deprecation', () =>
      this.#o.store.announceDeprecation(candidate, this.#o.policy),
    );
    await this.refresh();
    return r;
  }
}
