import { ok, refuse, type Result } from '../errors.js';
import { isProtocolVersion, type ProtocolWindow } from './protocol.js';

/**
 * An operator's announcement: from `effectiveAt` on, the server's Min is `minProtocolVersion`.
 * Times are milliseconds since the Unix epoch.
 */
export interface DeprecationAnnouncement {
  readonly minProtocolVersion: string;
  readonly effectiveAt: number;
  readonly announcedAt: number;
}

export interface DeprecationPolicy {
  /** The window this build ships with (SVC_PROTOCOL_MIN, SVC_PROTOCOL_MAX). */
  readonly build: ProtocolWindow;
  /** The least time between an announcement and its effective instant (SVC_DEPRECATION_NOTICE_S). */
  readonly noticeMs: number;
}

/**
 * The window in force at `now`: the build's Min raised by every announcement already in effect,
 * never above the build's Max. Only announcements whose instant has come count, so the Min can
 * only grow as time passes (an announcement is never withdrawn), and no job has to flip anything.
 */
export function effectiveWindow(
  build: ProtocolWindow,
  announcements: readonly DeprecationAnnouncement[],
  now: number,
): ProtocolWindow {
  let min = build.min;
  for (const a of announcements) {
    if (a.effectiveAt <= now && a.minProtocolVersion > min) min = a.minProtocolVersion;
  }
  return min > build.max ? { min: build.max, max: build.max } : min === build.min ? build : { min, max: build.max };
}

/** Announcements whose instant has not come yet, soonest first (server-info lists these). */
export function pendingAnnouncements(
  announcements: readonly DeprecationAnnouncement[],
  now: number,
): DeprecationAnnouncement[] {
  return announcements
    .filter((a) => a.effectiveAt > now)
    .sort((a, b) => a.effectiveAt - b.effectiveAt || (a.minProtocolVersion < b.minProtocolVersion ? -1 : 1));
}

/**
 * What a client written against `version` should be told while it is still admitted: the soonest
 * pending announcement that will leave it below the Min (its Deprecation and Sunset), or null.
 */
export function deprecationNotice(
  version: string,
  announcements: readonly DeprecationAnnouncement[],
  now: number,
): DeprecationAnnouncement | null {
  let soonest: DeprecationAnnouncement | null = null;
  for (const a of announcements) {
    if (
      a.effectiveAt > now &&
      version < a.minProtocolVersion &&
      (soonest === null || a.effectiveAt < soonest.effectiveAt)
    )
      soonest = a;
  }
  return soonest;
}

export type AnnounceRefusal = 'error.deprecation.invalid' | 'error.deprecation.too_soon';

/**
 * Whether `candidate` may join `existing`. It must name a real version no newer than the build's
 * Max, lie at least the notice period after its own announcement, and actually raise the Min in
 * force at its instant (an announcement that changes nothing would only confuse clients). Stores
 * call this inside the transaction that inserts, so two racing announcements are judged in turn.
 */
export function decideAnnouncement(
  existing: readonly DeprecationAnnouncement[],
  candidate: DeprecationAnnouncement,
  policy: DeprecationPolicy,
): Result<DeprecationAnnouncement, AnnounceRefusal> {
  const v = candidate.minProtocolVersion;
  if (!isProtocolVersion(v))
    return refuse('error.deprecation.invalid', `"${v}" is not a protocol version (YYYY-MM-DD).`);
  if (v > policy.build.max)
    return refuse(
      'error.deprecation.invalid',
      `${v} is newer than this server's Max ${policy.build.max}; the Min can never pass the Max.`,
    );
  if (!Number.isSafeInteger(candidate.effectiveAt) || !Number.isSafeInteger(candidate.announcedAt)) {
    return refuse('error.deprecation.invalid', 'The effective instant is not a valid time.');
  }
  const earliest = candidate.announcedAt + policy.noticeMs;
  if (candidate.effectiveAt < earliest) {
    return refuse(
      'error.deprecation.too_soon',
      `effective_at must be at least the notice period (${Math.ceil(policy.noticeMs / 1000)} s) after now: no earlier than ${new Date(earliest).toISOString()}.`,
      { earliest_effective_at: earliest },
    );
  }
  const then = effectiveWindow(policy.build, existing, candidate.effectiveAt);
  if (v <= then.min)
    return refuse(
      'error.deprecation.invalid',
      `The Min at that instant is already ${then.min}; announce a newer version.`,
    );
  return ok(candidate);
}
