import { sha256, toBase64url, utf8 } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import type {
  AuthorizationRequest,
  IdentityProvider,
  RedeemOutcome,
  Redemption,
  VerifiedIdentity,
} from '../ports/identity-provider.js';

/** A person at the fake provider. */
export interface FakePerson {
  readonly subject: string;
  readonly email?: string | null;
  readonly emailVerified?: boolean;
  readonly name?: string | null;
}

/**
 * An OpenID provider in memory for core tests: it remembers each authorization request, lets a test
 * sign a person in (handing back the callback parameters), and redeems each code once, checking the
 * PKCE verifier and the nonce as a real provider and relying party would.
 */
export class FakeIdentityProvider implements IdentityProvider {
  readonly requests = new Map<string, AuthorizationRequest>();
  readonly #codes = new Map<string, { request: AuthorizationRequest; identity: VerifiedIdentity }>();
  #n = 0;
  up = true;
  /** Makes the next redemption fail this way (then clears). */
  failNext: 'exchange_failed' | 'id_token_invalid' | null = null;

  constructor(
    readonly issuer = 'https://idp.example',
    readonly now: () => number = () => 0,
  ) {}

  async authorizationUrl(request: AuthorizationRequest): Promise<string> {
    if (!this.up) throw new CoreError('error.auth.unavailable', 'the provider is unreachable');
    this.requests.set(request.state, request);
    const url = new URL(`${this.issuer}/authorize`);
    url.searchParams.set('state', request.state);
    url.searchParams.set('nonce', request.nonce);
    url.searchParams.set('code_challenge', request.codeChallenge);
    if (request.maxAge !== undefined) url.searchParams.set('max_age', String(request.maxAge));
    return url.toString();
  }

  /** The person signs in at the provider; returns the callback's query parameters. */
  signIn(state: string, person: FakePerson, authTime: number = this.now()): Record<string, string> {
    const request = this.requests.get(state);
    if (!request) throw new Error('no such authorization request');
    const code = `code-${++this.#n}`;
    this.#codes.set(code, {
      request,
      identity: {
        issuer: this.issuer,
        subject: person.subject,
        email: person.email ?? null,
        emailVerified: person.emailVerified ?? false,
        name: person.name ?? null,
        authTime,
      },
    });
    return { code, state, iss: this.issuer };
  }

  async redeem(r: Redemption): Promise<RedeemOutcome> {
    if (!this.up) throw new CoreError('error.auth.unavailable', 'the provider is unreachable');
    const fail = this.failNext;
    this.failNext = null;
    const code = r.params['code'];
    const held = code === undefined ? undefined : this.#codes.get(code);
    if (code !== undefined) this.#codes.delete(code);
    if (!held || fail === 'exchange_failed') return { ok: false, reason: 'exchange_failed' };
    if (toBase64url(sha256(utf8(r.codeVerifier))) !== held.request.codeChallenge)
      return { ok: false, reason: 'exchange_failed' };
    if (fail === 'id_token_invalid' || r.nonce !== held.request.nonce) return { ok: false, reason: 'id_token_invalid' };
    return { ok: true, identity: held.identity };
  }
}
