import { ok, refuse, type Result } from '../errors.js';
import { addressKeyOf, holdsInvisible, normalizeAddress, type NormalizedAddress } from '../profile/rules.js';

/** Who may create an account (`SVC_REGISTRATION`). */
export const REGISTRATION_MODES = ['open', 'closed', 'allowlist'] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

export function isRegistrationMode(text: string): text is RegistrationMode {
  return (REGISTRATION_MODES as readonly string[]).includes(text);
}

/** A domain part: labels of letters, digits and hyphens (any script), separated by single dots. */
const DOMAIN = /^[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?(?:\.[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?)+$/u;

/**
 * The stored form of an allowlist entry as an operator types it. An address is keyed as sign-in
 * keys it (normalizeAddress: NFC and case folding), so every spelling that reaches the same account
 * matches; `@domain` admits every address at exactly that domain (not its subdomains), compared
 * case-insensitively.
 */
export function allowlistEntry(input: string): Result<string, 'error.request.invalid'> {
  const typed = input.trim();
  if (typed.startsWith('@')) {
    const domain = typed.slice(1).normalize('NFC');
    if (holdsInvisible(domain) || !DOMAIN.test(domain) || domain.length > 253) {
      return refuse('error.request.invalid', `"${typed}" is not @ followed by a domain such as @example.org`);
    }
    return ok(`@${addressKeyOf(domain)}`);
  }
  const address = normalizeAddress(typed);
  if (!address.ok)
    return refuse('error.request.invalid', `"${typed}" is neither an e-mail address nor @ followed by a domain`);
  return ok(address.value.key);
}

/** The entries that would admit this address: the address itself and its domain. */
export function allowlistCandidates(address: NormalizedAddress): string[] {
  const at = address.key.lastIndexOf('@');
  return [address.key, `@${address.key.slice(at + 1)}`];
}

/**
 * May an account be created for `address` (null: a first OpenID sign-in without a verified email)?
 * `listed` holds the allowlist entries found among `allowlistCandidates(address)`; it is read only
 * in allowlist mode. Open admits everyone, closed nobody, allowlist an address listed itself or
 * by its domain. Both doors (register, a first OpenID sign-in) ask this one rule.
 */
export function decideRegistration(
  mode: RegistrationMode,
  address: NormalizedAddress | null,
  listed: readonly string[],
): Result<void, 'error.auth.registration_closed'> {
  if (mode === 'open') return ok(undefined);
  if (mode === 'allowlist' && address !== null) {
    const found = new Set(listed);
    if (allowlistCandidates(address).some((c) => found.has(c))) return ok(undefined);
  }
  return refuse('error.auth.registration_closed', 'This server does not take new accounts for this address.');
}
