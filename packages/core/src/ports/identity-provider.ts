/** What the relying party asks the provider to do when a browser is sent to it. */
export interface AuthorizationRequest {
  readonly state: string;
  readonly nonce: string;
  /** PKCE S256 challenge of the verifier kept server-side. */
  readonly codeChallenge: string;
  /** 0 asks the provider to authenticate the person again (reauthentication). */
  readonly maxAge?: number;
}

/** The callback as the browser brought it back, plus what the flow stored for it. */
export interface Redemption {
  /** Every query parameter of the callback (`code`, `state`, `iss`, ...). */
  readonly params: Readonly<Record<string, string>>;
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

/** The person the provider vouched for, after the ID token passed every check. */
export interface VerifiedIdentity {
  readonly issuer: string;
  readonly subject: string;
  readonly email: string | null;
  readonly emailVerified: boolean;
  readonly name: string | null;
  /** When the person last authenticated at the provider (ms), when the token says. */
  readonly authTime: number | null;
}

export type RedeemOutcome =
  | { readonly ok: true; readonly identity: VerifiedIdentity }
  | { readonly ok: false; readonly reason: 'exchange_failed' | 'id_token_invalid' };

/**
 * An OpenID provider, seen by the relying party. The adapter owns discovery, the token endpoint and
 * ID-token validation (signature, `iss`, `aud`, `exp`, `nonce`). An unreachable provider (no
 * metadata yet) throws CoreError `error.auth.unavailable`.
 */
export interface IdentityProvider {
  /** The configured issuer identifier: links are keyed on it. */
  readonly issuer: string;
  authorizationUrl(request: AuthorizationRequest): Promise<string>;
  redeem(redemption: Redemption): Promise<RedeemOutcome>;
}
