import type { AnyRoute } from './route-def.js';

/** The HTTP authentication schemes the API takes in `Authorization`. */
export type Scheme = 'Bearer' | 'Upload' | 'SvcCapability';

/**
 * The schemes a route takes, read from its definition: `auth` routes take Bearer (and Upload where
 * a guest's upload token is admitted), and so do `optionalAuth` routes; routes that check a header
 * themselves name theirs in `security`. A route whose credential travels in the body (password, code, session token, login
 * code) names Bearer, the scheme of the tokens it hands out.
 */
export function schemesOf(r: Pick<AnyRoute, 'auth' | 'uploadToken' | 'security' | 'optionalAuth'>): Scheme[] {
  if (r.auth) return r.uploadToken === true ? ['Bearer', 'Upload'] : ['Bearer'];
  if (r.optionalAuth === true) return ['Bearer'];
  const declared = (r.security ?? []).map((s): Scheme => (s === 'svcCapability' ? 'SvcCapability' : 'Bearer'));
  return declared.length > 0 ? declared : ['Bearer'];
}

/**
 * `WWW-Authenticate` for a 401 (RFC 9110 section 11.6.1; RFC 6750 section 3): one challenge per scheme
 * the route takes. The scheme the request presented, and that was refused, carries
 * `error="invalid_token"`; without a credential in that scheme, no error code. Only the scheme
 * name of the request's header is read, never its value.
 */
export function challengeFor(
  schemes: readonly Scheme[],
  authorization: string | undefined,
  headerSchemes: boolean,
): string {
  const space = authorization?.indexOf(' ') ?? -1;
  const presented =
    headerSchemes && authorization !== undefined
      ? (space < 0 ? authorization : authorization.slice(0, space)).toLowerCase()
      : null;
  return schemes.map((s) => (s.toLowerCase() === presented ? `${s} error="invalid_token"` : s)).join(', ');
}

/** True when the route reads a credential from `Authorization` (false: it comes in the body). */
export const readsAuthorization = (r: Pick<AnyRoute, 'auth' | 'security' | 'optionalAuth'>): boolean =>
  r.auth || r.optionalAuth === true || (r.security?.length ?? 0) > 0;

/**
 * The refusals that say the presented token was refused. On an `optionalAuth` route a 401 may refuse
 * something else the request carries (a login code) while its token is good: only these mark it.
 */
export const TOKEN_REFUSALS: ReadonlySet<string> = new Set(['error.auth.session_invalid']);
