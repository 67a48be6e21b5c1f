import { isCalendarDate } from '../encoding/time.js';
import { ok, refuse, type Result } from '../errors.js';

/** The closed [min, max] window of protocol versions a server accepts. */
export interface ProtocolWindow {
  readonly min: string;
  readonly max: string;
}

export const DEFAULT_PROTOCOL_WINDOW: ProtocolWindow = { min: '2026-03-01', max: '2026-11-01' };

/** The value of `count` ASCII digits at `at`, or -1 if any is not a digit. */
function digits(s: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * True for a real calendar date written YYYY-MM-DD (so lexicographic order is time order).
 * Hand-parsed without allocating: every versioned request runs it.
 */
export function isProtocolVersion(value: string): boolean {
  if (value.length !== 10 || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45) return false;
  const y = digits(value, 0, 4);
  const mo = digits(value, 5, 2);
  const d = digits(value, 8, 2);
  return y >= 0 && isCalendarDate(y, mo, d);
}

const rangeOf = (window: ProtocolWindow) => ({ supported_min: window.min, supported_max: window.max });

export interface Negotiated {
  readonly version: string;
}

/**
 * Decides whether a request written against `requested` may proceed. Missing, malformed or newer
 * than max is unsupported for everything; older than min still reads but may not write.
 */
export function negotiateProtocol(
  requested: string | undefined,
  window: ProtocolWindow,
  request: { write: boolean },
): Result<Negotiated, 'error.protocol.unsupported' | 'error.protocol.below_min'> {
  if (requested === undefined || !isProtocolVersion(requested) || requested > window.max) {
    return refuse(
      'error.protocol.unsupported',
      'The protocol version is missing, malformed or newer than this server supports.',
      rangeOf(window),
    );
  }
  if (requested < window.min && request.write) {
    return refuse('error.protocol.below_min', 'This protocol version may read but no longer write.', rangeOf(window));
  }
  return ok({ version: requested });
}

/** A write to an album pinned to a newer version than the request's is refused; reads never are. */
export function checkAlbumPin(
  requested: string,
  albumPin: string,
  window: ProtocolWindow,
): Result<void, 'error.protocol.below_album_pin'> {
  if (requested < albumPin) {
    return refuse('error.protocol.below_album_pin', `This album is pinned to ${albumPin}.`, {
      album_pin: albumPin,
      supported_min: window.min,
      supported_max: window.max,
    });
  }
  return ok(undefined);
}
