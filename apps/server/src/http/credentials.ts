import { CoreError } from '@strongroom/core';
import { HttpProblem } from './problem.js';

/** The credentials a request carries, read without regular expressions (they run on every request). */

/**
 * The token of an `Authorization: Bearer <token>` header, or null. Its shape is left to the token
 * check (a cache hit needs the exact string; anything else goes through jose), which saves running
 * a regular expression over a long header on every request.
 */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined || header.length <= 7) return null;
  // The scheme is case-insensitive (RFC 9110); the common spelling is checked first as it is free.
  if (!header.startsWith('Bearer ') && header.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  return header.slice(7);
}

/** The token of an `Authorization: Upload <token>` header (a guest's one-drop token), or null. */
export function uploadToken(header: string | undefined): string | null {
  if (header === undefined || header.length <= 7 || header.slice(0, 7).toLowerCase() !== 'upload ') return null;
  return header.slice(7);
}

/** Turns an unreadable session ledger into 401 error.auth.unavailable, as spec §4.6 asks. */
export function authFailure(cause: unknown): HttpProblem {
  if (cause instanceof CoreError && cause.code === 'error.auth.unavailable') {
    return new HttpProblem(
      'error.auth.unavailable',
      'The session ledger cannot be read; try again shortly.',
      {},
      'authenticating',
    );
  }
  throw cause;
}
