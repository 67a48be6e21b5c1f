import { ok, refuse, type Result } from '../errors.js';
import type { AccountRecord } from '../ports/account-store.js';

export const DISPLAY_NAME_MAX = 128;
export const PASSWORD_MIN = 12;
/** Not fixed by the specification: bounds the work one argon2 call can be asked to do. */
export const PASSWORD_MAX = 1024;
export const ADDRESS_MAX = 254;

// Unicode category Cc: C0 controls, DEL and C1 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
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
    return refuse(
      'error.profile.invalid_display_name',
      `The display name may hold at most ${DISPLAY_NAME_MAX} characters.`,
    );
  }
  return ok(trimmed === '' ? null : trimmed);
}

/** At least 12 code points, no composition rules, no normalisation. */
export function checkPassword(password: string): Result<void, 'error.auth.weak_password' | 'error.request.invalid'> {
  const n = codePoints(password);
  if (n < PASSWORD_MIN)
    return refuse('error.auth.weak_password', `The password needs at least ${PASSWORD_MIN} characters.`);
  if (n > PASSWORD_MAX)
    return refuse('error.auth.weak_password', `The password may hold at most ${PASSWORD_MAX} characters.`);
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
  /** As the person typed it, trimmed and in NFC. */
  readonly address: string;
  /** NFC and case-folded ({@link addressKeyOf}), for uniqueness and lookup. */
  readonly key: string;
  /**
   * The key a database written before addresses were NFC-normalised and case-folded holds for this spelling (trimmed, `toLowerCase()`
   * only). Lookups try it after {@link key} so accounts stored then are still found.
   */
  readonly legacyKey: string;
}

/**
 * Code points an address may not hold: controls (Cc), format characters (Cf: soft hyphen, bidi
 * overrides, zero-width joiners) and every default-ignorable code point (zero-width space, word
 * joiner, BOM, variation selectors, fillers). Each renders as nothing or changes only how the rest
 * renders, so it could make a look-alike of someone else's address.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

/**
 * Whether an address as sent holds a code point an address may never hold (see {@link INVISIBLE}),
 * surrounding whitespace aside. trim() also strips U+FEFF, a default-ignorable rather than a space,
 * so that one refuses the address wherever it stands.
 */
export function holdsInvisible(input: string): boolean {
  return INVISIBLE.test(input.trim()) || input.includes('\ufeff');
}

/**
 * The comparison key of an address: NFC, then full case folding, then NFC again (case mapping can
 * leave a string unnormalized). JavaScript has no case-fold operation; upper-casing and then
 * lower-casing, repeated until the string no longer changes, applies the full (multi-character)
 * mappings that plain lower-casing misses: ß and ẞ fold with "ss", ligatures such as ﬁ with "fi",
 * final sigma with sigma, İ with "i̇", as Unicode's CaseFolding.txt (status C+F) folds them. Where the two differ (a few characters such as the
 * Cherokee letters, which folding maps to upper case) both sides still land on one key, which is
 * all a comparison needs.
 */
export function addressKeyOf(address: string): string {
  // Until nothing changes: one round takes ẞ only to ß (its lower case), which the next round
  // takes to "ss" as it takes ß. Of all code points only ẞ needs a second round (rules.test.ts).
  let key = address.normalize('NFC');
  for (let round = 0; round < 4; round++) {
    const next = key.toUpperCase().toLowerCase().normalize('NFC');
    if (next === key) break;
    key = next;
  }
  return key;
}

/**
 * A login address is an e-mail address, trimmed, at most 254 characters, holding no control or
 * default-ignorable code point, compared after NFC and full case folding (spec §3.2). Register, login, OpenID sign-in and the
 * operator's CLI all go through this one function.
 */
export function normalizeAddress(input: string): Result<NormalizedAddress, 'error.request.invalid'> {
  const typed = input.trim();
  if (holdsInvisible(input))
    return refuse('error.request.invalid', 'The address holds an invisible or control character.');
  // No control character is left to test for: holdsInvisible refused them all, and NFC makes none.
  const address = typed.normalize('NFC');
  if (codePoints(address) > ADDRESS_MAX || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/u.test(address)) {
    return refuse('error.request.invalid', 'The address must be an e-mail address of at most 254 characters.');
  }
  return ok({ address, key: addressKeyOf(address), legacyKey: typed.toLowerCase() });
}

/**
 * Finds the account an address names: by its key, then (a database written before NFC and case
 * folding) by the key that spelling had then. New accounts are only ever stored under the new key.
 */
export async function findAccountByAddress(
  accounts: { findAccountByAddress(addressKey: string): Promise<AccountRecord | null> },
  address: NormalizedAddress,
): Promise<AccountRecord | null> {
  const found = await accounts.findAccountByAddress(address.key);
  if (found !== null || address.legacyKey === address.key) return found;
  return accounts.findAccountByAddress(address.legacyKey);
}
