import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from 'jose';
import { refuse, ok, type Result } from '../errors.js';
import { uuidv7, uuidv7Time } from '../encoding/uuid.js';

/**
 * Capability tokens: what one server hands a peer so the peer answers a lookup on behalf of one of
 * the first server's users. EdDSA JWTs with their own `typ`, so neither side ever takes an access
 * token for one of these, nor the reverse.
 */
export const CAPABILITY_TYP = 'svc-capability+jwt';
export const CAPABILITY_SCOPE = 'lookup';
/** What this server mints: short, since each is good for one forwarded lookup. */
export const CAPABILITY_TTL_S = 300;
/** The longest lifetime a receiver accepts (exp - iat). */
export const CAPABILITY_MAX_TTL_S = 3600;
/**
 * The clock skew a receiver allows between servers: `iat` at most this far ahead of its clock, and
 * so `exp` at most {@link CAPABILITY_MAX_TTL_S} + this. Without it a token issued years ahead would
 * outlive its revocation, which an issuer lists for 24 hours only.
 */
export const CAPABILITY_MAX_SKEW_S = 60;

export interface CapabilityClaims {
  /** The minting server's base URL. */
  readonly iss: string;
  /** The receiving peer's base URL. */
  readonly aud: string;
  /** The looking user's handle or account id. */
  readonly sub: string;
  readonly scope: typeof CAPABILITY_SCOPE;
  /** UUIDv7. */
  readonly jti: string;
  readonly iat: number;
  readonly exp: number;
}

/** The claims of a fresh token for `peer`, minted at `now` (ms). */
export function capabilityClaims(input: {
  issuer: string;
  peer: string;
  subject: string;
  now: number;
  random: Uint8Array;
  ttlS?: number;
}): CapabilityClaims {
  const ttl = input.ttlS ?? CAPABILITY_TTL_S;
  if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > CAPABILITY_MAX_TTL_S)
    throw new RangeError(`a capability lives 1 to ${CAPABILITY_MAX_TTL_S} s`);
  const iat = Math.floor(input.now / 1000);
  return {
    iss: input.issuer,
    aud: input.peer,
    sub: input.subject,
    scope: CAPABILITY_SCOPE,
    jti: uuidv7(input.now, input.random),
    iat,
    exp: iat + ttl,
  };
}

export async function signCapability(
  claims: CapabilityClaims,
  signer: { kid: string; key: CryptoKey },
): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'EdDSA', typ: CAPABILITY_TYP, kid: signer.kid })
    .sign(signer.key);
}

export interface VerifiedCapability {
  readonly issuer: string;
  readonly subject: string;
  readonly jti: string;
  readonly expiresAt: number;
}

export type CapabilityRefusal = 'error.federation.capability_invalid';

/** The unverified header and issuer, enough to pick the key; null for anything that is not ours to try. */
export function peekCapability(token: string): { kid: string; issuer: string } | null {
  try {
    const header = decodeProtectedHeader(token);
    if (header.typ !== CAPABILITY_TYP || header.alg !== 'EdDSA' || typeof header.kid !== 'string') return null;
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' ? { kid: header.kid, issuer: iss } : null;
  } catch {
    return null;
  }
}

/**
 * Verifies signature, `typ`, `iss`, `aud` and lifetime with jose, then the rules jose does not
 * know: `aud` exactly one string (jose accepts a list), the scope, a UUIDv7 jti, `exp` at most {@link CAPABILITY_MAX_TTL_S} after `iat`, and neither
 * further ahead of `now` than the skew allows.
 */
export async function verifyCapability(
  token: string,
  jwk: JWK,
  expected: { issuer: string; audience: string; now: number },
): Promise<Result<VerifiedCapability, CapabilityRefusal>> {
  const bad = (detail: string) => refuse('error.federation.capability_invalid' as const, detail);
  let payload: Record<string, unknown>;
  try {
    const key = await importJWK({ ...jwk, alg: 'EdDSA' }, 'EdDSA');
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['EdDSA'],
      typ: CAPABILITY_TYP,
      issuer: expected.issuer,
      audience: expected.audience,
      currentDate: new Date(expected.now),
      requiredClaims: ['sub', 'jti', 'iat', 'exp', 'scope'],
    }));
  } catch {
    return bad('The capability token does not verify.');
  }
  const { sub, jti, iat, exp, scope, aud } = payload;
  // jose takes a list that names us; a token for several servers at once could be replayed to each.
  if (aud !== expected.audience)
    return bad("The capability token's aud must be this server's base URL, as one string.");
  if (scope !== CAPABILITY_SCOPE) return bad('The capability token is not for lookups.');
  if (typeof sub !== 'string' || typeof jti !== 'string' || uuidv7Time(jti) === null)
    return bad('The capability token is malformed.');
  if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > CAPABILITY_MAX_TTL_S || exp <= iat) {
    return bad(`A capability token lives at most ${CAPABILITY_MAX_TTL_S} s.`);
  }
  const nowS = expected.now / 1000;
  if (iat > nowS + CAPABILITY_MAX_SKEW_S || exp > nowS + CAPABILITY_MAX_TTL_S + CAPABILITY_MAX_SKEW_S) {
    return bad(`A capability token is issued at most ${CAPABILITY_MAX_SKEW_S} s ahead of this server's clock.`);
  }
  return ok({ issuer: expected.issuer, subject: sub, jti, expiresAt: exp * 1000 });
}
