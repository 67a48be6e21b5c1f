import * as v from 'valibot';

/** Shared wire shapes. Request objects are strict: an unknown key is refused, never ignored. */
export const Uuid = v.pipe(v.string(), v.regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a UUID'));
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
