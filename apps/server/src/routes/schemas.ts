import * as v from 'valibot';
import { CONTENT_HASH_PATTERN, DEVICE_ID_PATTERN, UUID_PATTERN } from '@strongroom/core';

/** Shared wire shapes. Request objects are strict: an unknown key is refused, never ignored. */
// Built from core's own checks, so the wire and the domain cannot disagree on what an id is.
export const Uuid = v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a UUID'));
export const ContentHash = v.pipe(v.string(), v.regex(CONTENT_HASH_PATTERN, 'must be 64 lowercase hex characters (SHA-256 of the ciphertext)'));
export const DeviceId = v.pipe(v.string(), v.regex(DEVICE_ID_PATTERN, 'must be 1 to 128 visible ASCII characters'));
export const Timestamp = v.pipe(v.string(), v.description('RFC 3339 UTC timestamp'));

export const TokenPair = v.object({
  session_id: Uuid,
  session_token: v.pipe(v.string(), v.description('Opaque 128-bit session token, base64url. Only ever sent in bodies.')),
  access_token: v.pipe(v.string(), v.description('EdDSA JWT, 15 minutes')),
  token_type: v.literal('Bearer'),
  expires_in: v.literal(900),
});

export const Problem = v.object({
  type: v.string(),
  title: v.string(),
  status: v.number(),
  code: v.string(),
  detail: v.string(),
});

/** Advisory fields: anything at all is accepted and a malformed value behaves exactly like none. */
export const Advisory = v.optional(v.unknown());
