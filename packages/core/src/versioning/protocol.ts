import { ok, refuse, type Result } from '../errors.js';

/** The closed [min, max] window of protocol versions a server accepts. */
export interface ProtocolWindow {
  readonly min: string;
  readonly max: string;
}

export const DEFAULT_PROTOCOL_WINDOW: ProtocolWindow = { min: '2026-03-01', max: '2026-11-01' };

/** True for a real calendar date written YYYY-MM-DD (so lexicographic order is time order). */
export function isProtocolVersion(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return d <= days;
}

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
  const range = { supported_min: window.min, supported_max: window.max };
  if (requested === undefined || !isProtocolVersion(requested) || requested > window.max) {
    return refuse('error.protocol.unsupported', 'The protocol version is missing, malformed or newer than this server supports.', range);
  }
  if (requested < window.min && request.write) {
    return refuse('error.protocol.below_min', 'This protocol version may read but no longer write.', range);
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
