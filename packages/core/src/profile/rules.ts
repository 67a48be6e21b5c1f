import { ok, refuse, type Result } from '../errors.js';

export const DISPLAY_NAME_MAX = 128;
export const PASSWORD_MIN = 12;
/** Not fixed by the contract: bounds the work one argon2 call can be asked to do. */
export const PASSWORD_MAX = 1024;
export const ADDRESS_MAX = 254;

// Unicode category Cc: C0 controls, DEL and C1 controls.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * Display-name rule: trimmed first, then refused (never rewritten) if it holds a control character
 * or more than 128 code points. Null, or empty after trimming, clears the name.
 */
export function normalizeDisplayName(
  input: string | null,
): Result<string | null, 'error.profile.invalid_display_name'> {
  if (input === null) return ok(null);
  const trimmed = input.trim();
  if (CONTROL.test(trimmed)) {
    return refuse('error.profile.invalid_display_name', 'The display name may not contain control characters.');
  }
  if (codePoints(trimmed) > DISPLAY_NAME_MAX) {
    return refuse('error.profile.invalid_display_name', `The display name may hold at most ${DISPLAY_NAME_MAX} characters.`);
  }
  return ok(trimmed === '' ? null : trimmed);
}

/** At least 12 code points, no composition rules, no normalisation. */
export function checkPassword(password: string): Result<void, 'error.auth.weak_password' | 'error.request.invalid'> {
  const n = codePoints(password);
  if (n < PASSWORD_MIN) return refuse('error.auth.weak_password', `The password needs at least ${PASSWORD_MIN} characters.`);
  if (n > PASSWORD_MAX) return refuse('error.auth.weak_password', `The password may hold at most ${PASSWORD_MAX} characters.`);
  return ok(undefined);
}

/**
 * Whether a presented password could match any stored one: none longer than {@link PASSWORD_MAX}
 * was ever accepted, so sign-in refuses it as wrong credentials without running the hasher.
 */
export function couldBePassword(password: string): boolean {
  // Cheap first: UTF-16 length is at least the code-point count.
  return password.length <= PASSWORD_MAX || codePoints(password) <= PASSWORD_MAX;
}

export interface NormalizedAddress {
  /** As the person typed it, trimmed. */
  readonly address: string;
  /** Case-folded, for uniqueness. */
  readonly key: string;
}

/** A login address is an e-mail address, trimmed, at most 254 characters, unique case-insensitively. */
export function normalizeAddress(input: string): Result<NormalizedAddress, 'error.request.invalid'> {
  const address = input.trim();
  if (codePoints(address) > ADDRESS_MAX || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/u.test(address) || CONTROL.test(address)) {
    return refuse('error.request.invalid', 'The address must be an e-mail address of at most 254 characters.');
  }
  return ok({ address, key: address.toLowerCase() });
}
