import * as v from 'valibot';
import {
  ADDRESS_MAX,
  CONTENT_HASH_PATTERN,
  DEVICE_ID_PATTERN,
  DISPLAY_NAME_MAX,
  PASSWORD_MAX,
  PASSWORD_MIN,
  UUID_PATTERN,
  normalizeAddress,
  normalizeDisplayName,
} from '@strongroom/core';
import { codePoints, rule } from '../http/rules.js';
import { named } from '../http/schema-names.js';

/** Shared wire shapes. Request objects are strict: an unknown key is refused, never ignored. */
// Built from core's own checks, so the wire and the domain cannot disagree on what an id is.
export const Uuid = v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a UUID'));
export const ContentHash = v.pipe(
  v.string(),
  v.regex(CONTENT_HASH_PATTERN, 'must be 64 lowercase hex characters (SHA-256 of the ciphertext)'),
);
export const DeviceId = v.pipe(v.string(), v.regex(DEVICE_ID_PATTERN, 'must be 1 to 128 visible ASCII characters'));
export const Timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description('RFC 3339 UTC timestamp'));
/**
 * A count of bytes (a size, a quota, an offset): a whole number, never negative, and 64-bit on the
 * wire. Blobs and quotas pass 2 GiB, so `format: int64` tells generators of typed languages to give
 * it a 64-bit integer rather than a double or a 32-bit int.
 */
export const Bytes = v.pipe(v.number(), v.integer(), v.minValue(0), v.metadata({ format: 'int64' }));
/** A whole count of things (assets, sessions, devices): an integer, never negative. */
export const Count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const TokenPair = v.object({
  session_id: Uuid,
  session_token: v.pipe(
    v.string(),
    v.description('Opaque 128-bit session token, base64url. Only ever sent in bodies.'),
  ),
  access_token: v.pipe(v.string(), v.description('EdDSA JWT, 15 minutes')),
  token_type: v.literal('Bearer'),
  expires_in: v.literal(900),
});
named('TokenPair', TokenPair);

/** What every sign-in answers: the token pair and a sign-in ticket (a password change answers TokenPair alone). */
export const SignedIn = v.object({
  ...TokenPair.entries,
  sign_in_ticket: v.pipe(
    v.string(),
    v.description(
      'Opaque, base64url. Keep it with the address and send it as sign_in_ticket on later logins: they are then judged by the ticket (5 wrong passwords void it) instead of the per-address and per-client-address throttles. Valid as long as a session may live; a password change, revoke-all or lock ends it.',
    ),
  ),
});
named('SignedIn', SignedIn);

/** A sign-in ticket presented at login; one that is unknown, void or for another address counts as absent. */
export const SignInTicketField = v.optional(
  v.pipe(
    v.string(),
    v.maxLength(256),
    v.description('The sign_in_ticket an earlier sign-in for this address returned.'),
  ),
);

/** Advisory fields: anything at all is accepted and a malformed value behaves exactly like none. */
export const Advisory = v.optional(v.unknown());

// The account rules live in core (profile/rules.ts); these carry them into the body check and the
// document. Each JSON Schema form accepts nothing the core refuses.
const NOT_CC = '\\u0000-\\u001f\\u007f-\\u009f';

/** An e-mail address (trimmed first), at most 254 code points. */
export const Address = v.pipe(
  v.string(),
  rule((a) => normalizeAddress(a).ok, `must be an e-mail address of at most ${ADDRESS_MAX} characters`, {
    json: { maxLength: ADDRESS_MAX, pattern: `^\\s*[^\\s@${NOT_CC}]+@[^\\s@${NOT_CC}]+\\.[^\\s@${NOT_CC}]+\\s*$` },
  }),
);

/** A password being set: 12 to 1,024 code points, no other rule (400 error.auth.weak_password). */
export const NewPassword = v.pipe(
  v.string(),
  rule(
    (p) => codePoints(p) >= PASSWORD_MIN && codePoints(p) <= PASSWORD_MAX,
    `must hold ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`,
    {
      code: 'error.auth.weak_password',
      json: { minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX },
    },
  ),
);

/**
 * A display name: trimmed, then at most 128 code points and no control character (400
 * error.profile.invalid_display_name); empty after trimming clears it.
 */
export const DisplayName = v.pipe(
  v.string(),
  rule(
    (d) => normalizeDisplayName(d).ok,
    `must hold at most ${DISPLAY_NAME_MAX} characters after trimming and no control character`,
    {
      code: 'error.profile.invalid_display_name',
      json: { pattern: `^\\s*(?:[^${NOT_CC}]{0,${DISPLAY_NAME_MAX - 1}}[^\\s${NOT_CC}])?\\s*$` },
    },
  ),
);
