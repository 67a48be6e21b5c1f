import {
  deprecationNotice,
  effectiveWindow,
  pendingAnnouncements,
  type DeprecationAnnouncement,
  type DeprecationService,
  type ProtocolWindow,
} from '@strongroom/core';
import { responseHeaders, type ResponseHeaders } from './respond.js';

/** Everything a request needs to know about the protocol window at its instant. */
export interface ProtocolMoment {
  readonly window: ProtocolWindow;
  /** Announcements not yet in effect, soonest first. */
  readonly pending: readonly DeprecationAnnouncement[];
  /** X-Svc-Protocol-Min/Max and X-Svc-Min-Client-Build, ready-made (see http/respond.ts). */
  readonly headers: ResponseHeaders;
  /** The same plus Deprecation and Sunset, for a request written against `version`; null when none apply. */
  noticeHeaders(version: string): ResponseHeaders | null;
  /** This moment holds for every instant before this one... */
  readonly validUntil: number;
  /** ...as long as the announcement list has not been re-read since (DeprecationService.generation). */
  readonly generation: number;
}

/**
 * The protocol window as time passes, for the hot path: one moment object is shared by every
 * request until the next announced instant (or the next due refresh of the cached list), so a
 * request costs one clock read and one comparison, with no allocation and no database read.
 */
export class LiveProtocol {
  #moment: ProtocolMoment;

  constructor(
    readonly deprecations: DeprecationService,
    readonly minClientBuild: string,
  ) {
    this.#moment = this.#build([], -Infinity, -Infinity, -1);
  }

  /** The window of the latest moment: what services outside the request path report as supported. */
  get window(): ProtocolWindow {
    return this.#moment.window;
  }

  /** The latest moment's headers, for an answer given when no moment can be computed. */
  get headers(): ResponseHeaders {
    return this.#moment.headers;
  }

  /** The moment for `now`, or null when it must be recomputed (call `at`). */
  fast(now: number): ProtocolMoment | null {
    const m = this.#moment;
    return now < m.validUntil && m.generation === this.deprecations.generation ? m : null;
  }

  async at(now: number): Promise<ProtocolMoment> {
    const fast = this.fast(now);
    if (fast) return fast;
    const list = await this.deprecations.current(now);
    this.#moment = this.#build(list, now, this.deprecations.loadedAt, this.deprecations.generation);
    return this.#moment;
  }

  #build(list: readonly DeprecationAnnouncement[], now: number, loadedAt: number, generation: number): ProtocolMoment {
    const window = effectiveWindow(this.deprecations.policy.build, list, now);
    const pending = pendingAnnouncements(list, now);
    const protocol = {
      'x-svc-protocol-min': window.min,
      'x-svc-protocol-max': window.max,
      'x-svc-min-client-build': this.minClientBuild,
    };
    const headers = responseHeaders(protocol);
    const variants = new Map<DeprecationAnnouncement, ResponseHeaders>();
    const nextInstant = pending[0]?.effectiveAt ?? Infinity;
    // Recomputed at the next announced instant, and when the cached list is due a re-read (which
    // DeprecationService.cached starts in the background, or awaits once the list is too old).
    const validUntil = Math.min(nextInstant, loadedAt + this.deprecations.refreshMs);
    return {
      window,
      pending,
      headers,
      validUntil,
      generation,
      noticeHeaders(version) {
        if (pending.length === 0) return null;
        const notice = deprecationNotice(version, pending, now);
        if (notice === null) return null;
        let h = variants.get(notice);
        if (!h) {
          h = responseHeaders({
            ...protocol,
            // RFC 9745: "@" and Unix seconds; RFC 8594: an HTTP-date.
            deprecation: `@${Math.floor(notice.announcedAt / 1000)}`,
            sunset: new Date(notice.effectiveAt).toUTCString(),
          });
          variants.set(notice, h);
        }
        return h;
      },
    };
  }
}
