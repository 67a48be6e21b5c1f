import * as oauth from 'oauth4webapi';
import {
  CoreError,
  type AuthorizationRequest,
  type IdentityProvider,
  type Logger,
  type RedeemOutcome,
  type Redemption,
} from '@strongroom/core';

export interface OidcRelyingPartyOptions {
  /** The provider's issuer identifier; its discovery document is read from under it. */
  readonly issuer: string;
  readonly clientId: string;
  /** With a secret the token endpoint is called with client_secret_basic; without, as a public client. */
  readonly clientSecret: string | null;
  /** This server's callback, registered at the provider. */
  readonly redirectUri: string;
  /** Space-separated scopes (`openid` first). */
  readonly scopes: string;
  readonly logger: Logger;
  /** After a failed discovery, the next attempt waits this long (ms). Default 5 s. */
  readonly retryMs?: number;
  /** Each request to the provider gives up after this long (ms). Default 10 s. */
  readonly timeoutMs?: number;
  /** Replaces the global fetch for every request to the provider (tests). */
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
}

/** An `http` issuer is accepted on loopback only (development and tests); anything else needs https. */
function isLoopbackHttp(url: string): boolean {
  const u = new URL(url);
  return u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]');
}

/**
 * The relying party on oauth4webapi: discovery, the authorization URL, the code exchange with PKCE,
 * and ID-token validation (signature against the provider's JWKS, `iss`, `aud`, `exp`, `nonce`).
 *
 * Discovery runs at start without holding the server up; while the provider cannot be reached,
 * every use retries it (at most once per `retryMs`) and otherwise throws `error.auth.unavailable`.
 * An ID token signed with a key the cached JWKS does not hold triggers one fresh discovery and key
 * download, so a provider's key rotation is picked up at once.
 */
export class OidcRelyingParty implements IdentityProvider {
  readonly issuer: string;
  readonly #o: OidcRelyingPartyOptions;
  readonly #client: oauth.Client;
  readonly #auth: oauth.ClientAuth;
  #as: oauth.AuthorizationServer | null = null;
  #pending: Promise<oauth.AuthorizationServer> | null = null;
  #failedAt = Number.NEGATIVE_INFINITY;

  constructor(options: OidcRelyingPartyOptions) {
    this.#o = options;
    this.issuer = options.issuer;
    this.#client = { client_id: options.clientId };
    this.#auth = options.clientSecret === null ? oauth.None() : oauth.ClientSecretBasic(options.clientSecret);
  }

  /** What every request to the provider carries: a timeout, and the loopback and fetch allowances. */
  #http(): oauth.HttpRequestOptions<'GET'> & oauth.HttpRequestOptions<'POST', URLSearchParams> {
    return {
      signal: AbortSignal.timeout(this.#o.timeoutMs ?? 10_000),
      ...(isLoopbackHttp(this.#o.issuer) ? { [oauth.allowInsecureRequests]: true } : {}),
      ...(this.#o.fetch ? { [oauth.customFetch]: this.#o.fetch } : {}),
    };
  }

  /** Fetches the discovery document now; resolves false (and logs) when the provider is unreachable. */
  async start(): Promise<boolean> {
    try {
      await this.#discover();
      return true;
    } catch {
      return false;
    }
  }

  #discover(): Promise<oauth.AuthorizationServer> {
    this.#pending ??= (async () => {
      const issuer = new URL(this.#o.issuer);
      try {
        const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...this.#http() });
        const as = await oauth.processDiscoveryResponse(issuer, response);
        this.#as = as;
        this.#o.logger.info('oidc.discovered', { issuer: as.issuer });
        return as;
      } catch (cause) {
        this.#failedAt = (this.#o.now ?? Date.now)();
        this.#o.logger.warn('oidc.discovery_failed', {
          issuer: this.#o.issuer,
          error: String((cause as Error)?.message ?? cause),
        });
        throw new CoreError('error.auth.unavailable', 'the OpenID provider cannot be reached', { cause });
      } finally {
        this.#pending = null;
      }
    })();
    return this.#pending;
  }

  async #metadata(): Promise<oauth.AuthorizationServer> {
    if (this.#as !== null) return this.#as;
    if ((this.#o.now ?? Date.now)() - this.#failedAt < (this.#o.retryMs ?? 5_000)) {
      throw new CoreError('error.auth.unavailable', 'the OpenID provider cannot be reached');
    }
    return this.#discover();
  }

  async authorizationUrl(request: AuthorizationRequest): Promise<string> {
    const as = await this.#metadata();
    if (as.authorization_endpoint === undefined)
      throw new CoreError('error.auth.unavailable', 'the provider publishes no authorization endpoint');
    const url = new URL(as.authorization_endpoint);
    const p = url.searchParams;
    p.set('response_type', 'code');
    p.set('client_id', this.#o.clientId);
    p.set('redirect_uri', this.#o.redirectUri);
    p.set('scope', this.#o.scopes);
    p.set('state', request.state);
    p.set('nonce', request.nonce);
    p.set('code_challenge', request.codeChallenge);
    p.set('code_challenge_method', 'S256');
    if (request.maxAge !== undefined) p.set('max_age', String(request.maxAge));
    return url.toString();
  }

  async redeem(r: Redemption): Promise<RedeemOutcome> {
    const as = await this.#metadata();
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, this.#client, new URLSearchParams({ ...r.params }), r.state);
    } catch (cause) {
      return this.#refused('exchange_failed', 'authorization response', cause);
    }
    let response: Response;
    try {
      response = await oauth.authorizationCodeGrantRequest(
        as,
        this.#client,
        this.#auth,
        params,
        this.#o.redirectUri,
        r.codeVerifier,
        this.#http(),
      );
    } catch (cause) {
      return this.#refused('exchange_failed', 'token request', cause);
    }
    let result: oauth.TokenEndpointResponse;
    try {
      result = await oauth.processAuthorizationCodeResponse(as, this.#client, response, {
        expectedNonce: r.nonce,
        requireIdToken: true,
      });
    } catch (cause) {
      const protocolError =
        cause instanceof oauth.ResponseBodyError || cause instanceof oauth.WWWAuthenticateChallengeError;
      return this.#refused(protocolError ? 'exchange_failed' : 'id_token_invalid', 'token response', cause);
    }
    try {
      await this.#verifySignature(as, response);
    } catch (cause) {
      return this.#refused('id_token_invalid', 'ID token signature', cause);
    }
    const claims = oauth.getValidatedIdTokenClaims(result)!;
    const email = typeof claims['email'] === 'string' ? claims['email'] : null;
    const name = typeof claims['name'] === 'string' ? claims['name'] : null;
    return {
      ok: true,
      identity: {
        // The token's `iss` was checked against the discovered issuer, itself checked against this
        // one; links are keyed on the configured spelling so unlinking finds them.
        issuer: this.issuer,
        subject: claims.sub,
        email,
        emailVerified: claims['email_verified'] === true,
        name,
        authTime: typeof claims.auth_time === 'number' ? claims.auth_time * 1000 : null,
      },
    };
  }

  /** Checks the ID token's signature; an unknown key means the provider rotated: rediscover once and retry. */
  async #verifySignature(as: oauth.AuthorizationServer, response: Response): Promise<void> {
    try {
      await oauth.validateApplicationLevelSignature(as, response, this.#http());
    } catch (cause) {
      if (!(cause instanceof oauth.OperationProcessingError && cause.code === oauth.KEY_SELECTION)) throw cause;
      this.#o.logger.info('oidc.keys_refresh', { issuer: as.issuer });
      const fresh = await this.#discover();
      await oauth.validateApplicationLevelSignature(fresh, response, this.#http());
    }
  }

  #refused(reason: 'exchange_failed' | 'id_token_invalid', stage: string, cause: unknown): RedeemOutcome {
    const code = (cause as { code?: unknown })?.code;
    this.#o.logger.warn('oidc.redeem_refused', {
      stage,
      reason,
      code: typeof code === 'string' ? code : undefined,
      error: String((cause as Error)?.message ?? cause),
    });
    return { ok: false, reason };
  }
}
