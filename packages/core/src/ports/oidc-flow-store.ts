/** Why a flow was started. `link` and `reauthenticate` are started by a signed-in account. */
export type OidcPurpose = 'sign_in' | 'link' | 'reauthenticate';

/** One started flow, keyed on the SHA-256 of its state. The state itself is never stored. */
export interface OidcFlowRecord {
  readonly stateHash: string;
  readonly purpose: OidcPurpose;
  /** The account that started a `link` or `reauthenticate`; null for `sign_in`. */
  readonly initiator: string | null;
  readonly returnTo: string;
  /** The app's PKCE S256 challenge toward this server, when it sent one. */
  readonly appChallenge: string | null;
  /** The PKCE verifier toward the provider, sealed under the server key. */
  readonly sealedVerifier: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** What a callback handed to the client: redeemed once at `complete`. Keyed on the code's SHA-256. */
export interface LoginCodeRecord {
  readonly codeHash: string;
  readonly purpose: OidcPurpose;
  /** The account signed in, or the initiator of a link or reauthentication. */
  readonly accountId: string;
  readonly appChallenge: string | null;
  /** The identity to bind, for `link`. */
  readonly issuer: string | null;
  readonly subject: string | null;
  /** When the person authenticated at the provider (the reauthentication time). */
  readonly authenticatedAt: number;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/**
 * Started flows and issued login codes. Each is taken at most once: `take…` removes the record and
 * returns it in one atomic step, so of two concurrent takers exactly one gets it. Expiry is judged
 * by core on the returned record.
 */
export interface OidcFlowStore {
  /** Stores a flow and drops the flows and login codes core's OIDC_LAPSED takes at `now`. */
  insertFlow(flow: OidcFlowRecord, now: number): Promise<void>;
  takeFlow(stateHash: string): Promise<OidcFlowRecord | null>;
  insertLoginCode(code: LoginCodeRecord): Promise<void>;
  takeLoginCode(codeHash: string): Promise<LoginCodeRecord | null>;
}
