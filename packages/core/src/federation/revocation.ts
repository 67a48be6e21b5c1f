/**
 * The revocation window of capability tokens: an issuer lists a revoked token for 24 hours, which
 * outlives any token a receiver accepts (federation/capability.ts, CAPABILITY_MAX_TTL_S + skew).
 */

/** Revocations are published for this long, and nothing older (computed from time, no job). */
export const REVOCATION_WINDOW_S = 86_400;
export const REVOCATION_WINDOW_MS = REVOCATION_WINDOW_S * 1000;

/** The earliest revocation instant still listed at `now`. */
export function revocationCutoff(now: number): number {
  return now - REVOCATION_WINDOW_MS;
}

export function inRevocationWindow(revokedAt: number, now: number): boolean {
  return revokedAt > revocationCutoff(now) && revokedAt <= now;
}
