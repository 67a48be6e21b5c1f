/**
 * Discovery rules: what a handle looks like, which host it names, and what each kind of lookup may
 * reveal. Pure functions; the service and the stores apply them.
 */

/** The local part a person may claim: lower-case letters, digits, `.`, `_`, `-`; 1 to 64 of them. */
const HANDLE_USER = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export function isHandleUser(user: string): boolean {
  return HANDLE_USER.test(user);
}

/**
 * The host part of every handle this server gives out: the base URL's host, with its port only when
 * it is not the scheme's default (the WHATWG URL parser already drops a default port). Lower case.
 */
export function handleHost(baseUrl: string): string {
  return new URL(baseUrl).host.toLowerCase();
}

/**
 * A handle answers lookups only while its account lives. A deleted account's handle is retired:
 * its record stays (so nobody claims the name and is taken for the person who left), but every
 * lookup of it is the same "no such handle" as a name never claimed.
 */
export function handleInService<T extends { readonly retiredAt: number | null }>(record: T | null): T | null {
  return record !== null && record.retiredAt === null ? record : null;
}

export interface Handle {
  readonly user: string;
  /** Lower-cased host (with a non-default port). */
  readonly host: string;
}

/** Splits `user@host`; null when either side is malformed. The host comes back normalised. */
export function parseHandle(text: string): Handle | null {
  const at = text.lastIndexOf('@');
  // Only a missing `@` needs its own check: one in front leaves an empty user, which isHandleUser refuses.
  if (at === -1) return null;
  const user = text.slice(0, at);
  const host = normaliseHost(text.slice(at + 1));
  if (!isHandleUser(user) || host === null) return null;
  return { user, host };
}

/**
 * A DNS name, IPv4 address or bracketed IPv6 address with an optional port, lower-cased and with a
 * default port (80) dropped, as {@link handleHost} writes it; null for anything else.
 */
function normaliseHost(raw: string): string | null {
  // The pattern's `+` refuses the empty string. The length bound is this rule's own: the URL parser
  // takes a host of any length.
  if (raw.length > 261 || !/^[A-Za-z0-9.:[\]-]+$/.test(raw)) return null;
  try {
    // An http URL never parses with an empty host (the parser throws instead), so no check for one.
    return new URL(`http://${raw}/`).host;
  } catch {
    return null;
  }
}

export function formatHandle(user: string, host: string): string {
  return `${user}@${host}`;
}

/** Parses a WebFinger `resource`: only `acct:user@host` is well formed (the scheme in any case, as URI schemes are: RFC 3986 section 3.1). */
export function parseAcctResource(resource: string): Handle | null {
  if (resource.slice(0, 5).toLowerCase() !== 'acct:') return null;
  return parseHandle(resource.slice(5));
}

/** A handle as the store keeps it. */
export interface HandleView {
  readonly accountId: string;
  readonly user: string;
  readonly published: boolean;
}

/**
 * What an anonymous reader may see: only an opted-in record, and from it only the handle and the
 * display name. Never keys, devices, ids or album hints. Null means "nothing", which callers render
 * exactly as they render an unknown account.
 */
export function anonymousRecord(
  handle: HandleView | null,
  host: string,
  displayName: string | null,
): { handle: string; displayName: string | null } | null {
  if (handle === null || !handle.published) return null;
  return { handle: formatHandle(handle.user, host), displayName };
}

/** What an authenticated lookup answers: one account's keys exactly as its owner signed them. */
export interface LookupAnswer {
  readonly handle: string;
  readonly accountId: string;
  readonly displayName: string | null;
  /** The identity anchor, or null while the account has published no directory. */
  readonly identityKey: Uint8Array | null;
  /** The signed directory bytes as accepted, or null. */
  readonly directory: Uint8Array | null;
}

/**
 * Builds the authenticated answer from exactly these fields, so nothing else the stores hold (the
 * cohort, sessions, the address) can leak through a lookup.
 */
export function lookupAnswer(
  handle: HandleView,
  host: string,
  displayName: string | null,
  directory: { identityKey: Uint8Array; body: Uint8Array } | null,
): LookupAnswer {
  return {
    handle: formatHandle(handle.user, host),
    accountId: handle.accountId,
    displayName,
    identityKey: directory?.identityKey ?? null,
    directory: directory?.body ?? null,
  };
}
