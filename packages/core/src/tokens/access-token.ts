import { decodeProtectedHeader, jwtVerify } from 'jose';
import { uuidv7, uuidv7Time } from '../encoding/uuid.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type { Ed25519Signer } from '../ports/signer.js';
import type { KeyRing } from './key-ring.js';
import { signCompactJws, webCryptoSigner } from './signer.js';

export const ACCESS_TOKEN_TTL_S = 900;

/** Exactly the claims an access token carries. Never the cohort. */
export interface AccessTokenClaims {
  readonly iss: string;
  readonly sub: string;
  readonly sid: string;
  readonly iat: number;
  readonly exp: number;
  /** A UUIDv7: its timestamp is the issuance instant in milliseconds. */
  readonly jti: string;
}

export interface VerifiedAccessToken {
  readonly accountId: string;
  readonly sessionId: string;
  readonly jti: string;
  /** Issuance in milliseconds, from the jti (iat only has seconds). */
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export interface AccessTokensOptions {
  readonly keyRing: KeyRing;
  readonly clock: Clock;
  readonly random: Random;
  readonly issuer: string;
  /** Verified tokens kept to skip the signature check on repeat use. */
  readonly cacheSize?: number;
  /** Who computes the signatures; WebCrypto unless the platform brings a faster one. */
  readonly signer?: Ed25519Signer;
}

interface CacheEntry {
  /** The whole token string: a hit must match it exactly. */
  readonly raw: string;
  readonly token: VerifiedAccessToken;
  readonly kid: string;
}

/**
 * The cache key: the last 43 characters (258 bits of the Ed25519 signature). A fresh header string
 * has no cached hash, and hashing all of a ~400-character token cost more than the rest of the
 * lookup; the entry still holds the whole token and a hit compares it in full.
 */
const cacheKey = (token: string): string => token.slice(-43);

/**
 * Mints and checks EdDSA access tokens. Verified tokens are cached by their exact string, until
 * their own expiry or their key's retirement. This caches only the signature check: the caller
 * still reads the session ledger on every request, so revocation is never delayed.
 */
export class AccessTokens {
  readonly #o: AccessTokensOptions;
  readonly #cache = new Map<string, CacheEntry>();
  readonly #cacheSize: number;
  readonly #signer: Ed25519Signer;

  constructor(options: AccessTokensOptions) {
    this.#o = options;
    this.#cacheSize = options.cacheSize ?? 10_000;
    this.#signer = options.signer ?? webCryptoSigner();
  }

  /** `at`: the instant the issuance was recorded, when the caller recorded one (default now). */
  async issue(
    accountId: string,
    sessionId: string,
    at?: number,
  ): Promise<{ token: string; claims: AccessTokenClaims }> {
    const now = at ?? this.#o.clock.now();
    const iat = Math.floor(now / 1000);
    const claims: AccessTokenClaims = {
      iss: this.#o.issuer,
      sub: accountId,
      sid: sessionId,
      iat,
      exp: iat + ACCESS_TOKEN_TTL_S,
      jti: uuidv7(now, this.#o.random.bytes(10)),
    };
    const key = await this.#o.keyRing.activeKey();
    const token = await signCompactJws({ alg: 'EdDSA', typ: 'JWT', kid: key.kid }, { ...claims }, key, this.#signer);
    return { token, claims };
  }

  /**
   * The token's identity from the cache, synchronously, when this exact token was verified before
   * and its lifetime and key still hold; undefined when `verify` has to decide.
   */
  cached(token: string, now: number = this.#o.clock.now()): VerifiedAccessToken | undefined {
    const slot = cacheKey(token);
    const hit = this.#cache.get(slot);
    if (hit === undefined || hit.raw !== token) return undefined;
    if (now < hit.token.expiresAt && this.#o.keyRing.verifies(hit.kid, now)) return hit.token;
    this.#cache.delete(slot);
    return undefined;
  }

  /** The token's identity if its signature, issuer and lifetime check out; null otherwise. */
  async verify(token: string): Promise<VerifiedAccessToken | null> {
    const hit = this.cached(token);
    if (hit !== undefined) return hit;
    const now = this.#o.clock.now();
    const slot = cacheKey(token);
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return null;
    }
    if (typeof kid !== 'string') return null;
    const key = await this.#o.keyRing.verificationKey(kid);
    if (!key) return null;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: ['EdDSA'],
        // Never a capability token (typ svc-capability+jwt) or anything else signed by this ring.
        typ: 'JWT',
        issuer: this.#o.issuer,
        currentDate: new Date(now),
        requiredClaims: ['sub', 'sid', 'jti', 'iat', 'exp'],
      }));
    } catch {
      return null;
    }
    const { sub, sid, jti, exp, iat } = payload;
    if (
      typeof sub !== 'string' ||
      typeof sid !== 'string' ||
      typeof jti !== 'string' ||
      typeof exp !== 'number' ||
      typeof iat !== 'number'
    )
      return null;
    const issuedAt = uuidv7Time(jti);
    if (issuedAt === null) return null;
    // Exactly as `issue` mints them: a 15-minute life, and the jti's instant (which the session's
    // access floor is judged by) within the second `iat` names. Only a holder of the signing key
    // could mint anything else; this is the second line behind the key.
    if (exp - iat !== ACCESS_TOKEN_TTL_S || Math.floor(issuedAt / 1000) !== iat) return null;
    const verified: VerifiedAccessToken = { accountId: sub, sessionId: sid, jti, issuedAt, expiresAt: exp * 1000 };
    if (this.#cache.size >= this.#cacheSize) {
      // Drop the oldest entry (Map keeps insertion order): bounded memory, no timers.
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(slot, { raw: token, token: verified, kid });
    return verified;
  }
}
