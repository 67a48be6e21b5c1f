/**
 * The revocation window of capability tokens: an issuer lists a revoked token for 24 hours, which
 * outlives any token a receiver accepts (federation/capability.ts, CAPABILITY_MAX_TTL_S + skew).
 */

import type { RowFilter } from '../filters/filter.js';

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

/** The minted tokens a revoke at `at` reaches (parameter `at`): not revoked yet, and not expired. */
export const CAPABILITY_REVOCABLE: RowFilter<'revokedAt' | 'expiresAt'> = [
  { op: 'isNull', field: 'revokedAt' },
  { op: '>', field: 'expiresAt', param: 'at' },
];

/**
 * The minted tokens a purge with cutoff `before` forgets (parameter `before`): expired by then, and
 * not revoked after it (a revocation inside the window is still listed).
 */
export const CAPABILITY_PURGEABLE: RowFilter<'revokedAt' | 'expiresAt'> = [
  { op: '<=', field: 'expiresAt', param: 'before' },
  {
    op: 'or',
    terms: [
      { op: 'isNull', field: 'revokedAt' },
      { op: '<=', field: 'revokedAt', param: 'before' },
    ],
  },
];

/** The revocations listed from `since` (parameter `since`), oldest first. */
export const REVOCATION_LISTED: RowFilter<'revokedAt'> = [
  { op: 'notNull', field: 'revokedAt' },
  { op: '>=', field: 'revokedAt', param: 'since' },
];
