import createClient, { type Client } from 'openapi-fetch';
import { sha256 as sha256Hasher } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { cohortHash, fromBase64url, sha256, sha256Hex, toBase64url, type PlatformTag } from '@strongroom/core';
import { errorFor, OutageError, readProblem, SessionLostError, StrongroomError, type Problem } from './errors.js';
import type { components, paths } from './generated/api.js';
import type { IdentityKey } from './keys.js';
import { readerOf, type SourceReader, type UploadSource } from './source.js';

/** The protocol version this client speaks (sent as `X-Svc-Protocol` on every request). */
export const PROTOCOL_VERSION = '2026-11-01';

/** A session as the client keeps it. Persist it (securely) to stay signed in across restarts. */
export interface SessionTokens {
  readonly sessionId: string;
  /** Long-lived and secret: only ever sent in the refresh body. Keep it in the platform's key store. */
  readonly sessionToken: string;
  /** Short-lived (15 minutes) bearer token; refreshed by the client when the server says it is stale. */
  readonly accessToken: string;
}

/** How to reach the server, and where the session comes from and goes to. */
export interface StrongroomClientOptions {
  /** The server's base URL, e.g. `https://photos.example.org`. */
  readonly baseUrl: string;
  /** `X-Svc-Protocol` to send; defaults to {@link PROTOCOL_VERSION}. */
  readonly protocolVersion?: string;
  /** A session restored from storage. */
  readonly session?: SessionTokens | null;
  /** Called whenever the session changes (signed in, refreshed, lost): persist it here. */
  readonly onSessionChange?: (session: SessionTokens | null) => void;
  /** The fetch to use (defaults to the global one). */
  readonly fetch?: (input: Request, init?: RequestInit) => Promise<Response>;
}

/** What signing in with a password yields: a session, or a second-factor challenge to answer. */
export type SignInResult =
  | { readonly kind: 'session'; readonly session: SessionTokens }
  | { readonly kind: 'challenge'; readonly challenge: string; readonly expiresIn: number; readonly accountId?: string };

/** The device-cohort hash and device id a sign-in may carry (both advisory). */
export interface SignInContext {
  /** From `cohortHash(...)`: 64 lower-case hex characters. */
  readonly cohortHash?: string;
  readonly deviceId?: string;
  /**
   * For {@link StrongroomClient.signIn}: a sign-in ticket kept from an earlier sign-in for this
   * address (see {@link StrongroomClient.signInTicket}). Without it, the client sends the last one
   * it received itself, if any.
   */
  readonly signInTicket?: string;
}

/** A finished upload. */
export interface UploadResult {
  readonly uploadId: string;
  /** `Completed` (charged) or `Merged` (already stored, nothing charged). */
  readonly state: string;
  readonly assetId: string | null;
  /** SHA-256 of the bytes, lower-case hex: the blob's content address. */
  readonly contentHash: string;
  /** How the bytes went: straight to object storage with the server's presigned URL (or a URL per part), or through the server. */
  readonly transfer: 'direct' | 'proxied';
}

/** How an upload goes: the session's fields, and how the bytes are read, sent, resumed and reported. */
export interface UploadOptions {
  /** A device of the account's signed directory (the write guard checks it). */
  readonly deviceId: string;
  readonly kind?: 'original' | 'derivative' | 'metadata' | 'provenance';
  readonly albumId?: string;
  /** Attach the blob to this asset at finalize (`manifest.asset_id`). */
  readonly assetId?: string;
  /** The source's length in bytes: required for a stream or iterable (the session reserves it first). */
  readonly size?: number;
  /** `false`: never the server's direct upload to object storage, always through the server. */
  readonly direct?: boolean;
  /** Aborts at once; the session stays open, to be resumed (see `resume`). */
  readonly signal?: AbortSignal;
  /** Bytes per PATCH, and the most of the source held at once (default 8 MiB). */
  readonly chunkSize?: number;
  /** Each acknowledged chunk: how many bytes the server holds, of how many. */
  readonly onProgress?: (progress: UploadProgress) => void;
  /** The session's id as soon as it is open: keep it to resume after a crash, a reload or an abort. */
  readonly onSession?: (uploadId: string) => void;
  /** Go on with this open session (an id from `onSession`), from the offset the server holds. */
  readonly resume?: string;
  /**
   * Milliseconds to wait before each new try of a request that failed for a reason that may pass
   * (the server unreachable, a connection cut, a 5xx); as many tries as delays, counted afresh for
   * every chunk. Default `[0, 1000, 3000, 5000]` (tus-js-client's).
   */
  readonly retryDelays?: readonly number[];
}

/** Where an upload stands: `sent` of `total` bytes are durably held by the server. */
export interface UploadProgress {
  readonly sent: number;
  readonly total: number;
}

/** What one PATCH carries, and the most of a source an upload holds at once, unless told otherwise. */
export const DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;
const DEFAULT_RETRY_DELAYS: readonly number[] = [0, 1000, 3000, 5000];

const REFRESH_PATH = '/v1/auth/refresh';
/** How long before its expiry an access token is replaced (clocks drift; a request takes time). */
const REFRESH_AHEAD_S = 60;

/**
 * A Strongroom client: the typed HTTP API (`api`, generated from the server's OpenAPI document and
 * driven by openapi-fetch) plus the client side of the protocol.
 *
 * Every request carries `X-Svc-Protocol`, and `Authorization: Bearer` while signed in. When an
 * authenticated request answers 401 `error.auth.session_invalid`, the client refreshes the access
 * token once (concurrent requests share one refresh) and repeats the request; when the refresh is
 * refused too, the session is lost (`onSessionChange(null)`). A 401 or 503 `error.auth.unavailable`
 * is never taken for an expiry: it rejects with an {@link OutageError} and the tokens are kept.
 *
 * Methods below cover the common flows and throw {@link StrongroomError} on a refusal; anything
 * else is one typed call away on `api`.
 *
 * @example
 * const client = new StrongroomClient({ baseUrl: 'https://photos.example.org', onSessionChange: save });
 * await client.register('ada@example.org', 'correct horse battery staple');
 * const { data } = await client.api.GET('/quota');
 */
export class StrongroomClient {
  /** The typed API: `api.GET('/v1/auth/sessions')`, `api.POST('/upload', { body })`, … */
  readonly api: Client<paths>;
  readonly #baseUrl: string;
  readonly #version: string;
  readonly #fetch: (input: Request, init?: RequestInit) => Promise<Response>;
  readonly #onSessionChange: ((session: SessionTokens | null) => void) | undefined;
  #session: SessionTokens | null;
  #signInTicket: string | null = null;
  #refreshing: Promise<boolean> | null = null;
  /**
   * When the current access token runs out by this device's clock: its lifetime (exp - iat) from
   * the moment it arrived, so a device clock set wrong does not matter. Null for a session restored
   * from storage (its arrival is unknown): such a token is replaced when the server refuses it.
   */
  #tokenDeadline: number | null = null;

  constructor(options: StrongroomClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#version = options.protocolVersion ?? PROTOCOL_VERSION;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#onSessionChange = options.onSessionChange;
    this.#session = options.session ?? null;
    this.api = createClient<paths>({ baseUrl: this.#baseUrl, fetch: (request) => this.#send(request) });
  }

  /** The current session, or null when signed out. */
  get session(): SessionTokens | null {
    return this.#session;
  }

  /**
   * The sign-in ticket of the latest sign-in through this client, or null. Keep it with the address
   * (it is a secret, like the session token) and pass it back as `signInTicket` on a later
   * {@link signIn}: that login is then judged by the ticket's own count, not refused because
   * strangers guessed at the address or shared the client's network address. A password change,
   * revoke-all or lock ends it.
   */
  get signInTicket(): string | null {
    return this.#signInTicket;
  }

  /** The signed-in account's id (the access token's `sub`), or null when signed out. */
  get accountId(): string | null {
    return this.#session === null ? null : accountIdOf(this.#session.accessToken);
  }

  /**
   * This device's cohort hash for the account: from the platform and the device's primary id
   * (a stable install or hardware id that never leaves the device), folded with the account id so
   * one device under two accounts gives two unlinkable values. Pass it to {@link signIn} and
   * {@link verifyTotp}. `accountId` defaults to the signed-in account's (keep it from an earlier
   * session to send the hash when signing in again).
   */
  cohortHash(platform: PlatformTag, primaryId: string, accountId: string | null = this.accountId): string {
    if (accountId === null) throw new RangeError('the cohort hash needs the account id when signed out');
    return cohortHash({ userId: accountId, platform, primaryId });
  }

  /** Replaces the session (restored from storage, or null to forget it locally). */
  setSession(session: SessionTokens | null): void {
    this.#session = session;
    this.#tokenDeadline = null;
    this.#onSessionChange?.(session);
  }

  /** Keeps a token that just arrived from the server, and when it runs out here. */
  #received(session: SessionTokens): void {
    this.setSession(session);
    const claims = claimsOf(session.accessToken);
    if (typeof claims?.exp === 'number' && typeof claims.iat === 'number')
      this.#tokenDeadline = Date.now() + (claims.exp - claims.iat) * 1000;
  }

  // ---- the request pipeline -------------------------------------------------------------------

  async #send(request: Request, init?: RequestInit): Promise<Response> {
    let session = this.#session;
    const authenticated =
      session !== null && !request.headers.has('authorization') && !request.url.endsWith(REFRESH_PATH);
    // Refresh before the access token runs out rather than after a refusal: a request that carries
    // a body (an upload) then never needs sending twice.
    if (authenticated && this.#tokenDeadline !== null && this.#tokenDeadline - Date.now() < REFRESH_AHEAD_S * 1000) {
      await this.#refreshOnce(session!.accessToken).catch(() => false);
      session = this.#session;
      if (session === null) return this.#call(this.#prepare(request, null), init);
    }
    // A request is repeated after a refresh only when its body is small by protocol (none, JSON of
    // at most 64 KiB, CBOR of at most 256 KiB): a copy of an upload's bytes, kept in case, would
    // hold the upload twice.
    const contentType = request.headers.get('content-type');
    const repeatable = request.body === null || isJson(contentType) || isCbor(contentType);
    const retry = authenticated && repeatable && request.body !== null ? request.clone() : request;
    const response = await this.#call(this.#prepare(request, authenticated ? session!.accessToken : null), init);
    if (response.status !== 401 && response.status !== 503) return response;
    const problem = await readProblem(response.clone());
    if (problem === null) return response;
    if (problem.code === 'error.auth.unavailable') throw errorFor(problem);
    if (!authenticated || problem.code !== 'error.auth.session_invalid') return response;
    // Refreshed even when the request is not sent again: the next one then carries a good token,
    // and a session the server no longer knows is forgotten here (the caller gets SessionLostError).
    if (!(await this.#refreshOnce(session!.accessToken)) || !repeatable) return response;
    return this.#call(this.#prepare(retry, this.#session!.accessToken), init);
  }

  /** One exchange; a request that never got an answer (no route, refused, reset) is an outage. */
  async #call(request: Request, init?: RequestInit): Promise<Response> {
    try {
      return await this.#fetch(request, init);
    } catch (err) {
      throw new OutageError(
        localProblem(
          'error.client.unreachable',
          `The server could not be reached: ${(err as Error)?.message ?? String(err)}`,
        ),
      );
    }
  }

  /**
   * A refusal as the error a caller catches: a session the server no longer knows (refused, the
   * refresh found it gone too, and it is forgotten here) is a {@link SessionLostError}.
   */
  #errorFor(problem: Problem): StrongroomError {
    if (problem.code === 'error.auth.session_invalid' && this.#session === null) return new SessionLostError(problem);
    return errorFor(problem);
  }

  #prepare(request: Request, accessToken: string | null): Request {
    const headers = new Headers(request.headers);
    if (!headers.has('x-svc-protocol')) headers.set('x-svc-protocol', this.#version);
    if (accessToken !== null) headers.set('authorization', `Bearer ${accessToken}`);
    return new Request(request, { headers });
  }

  /**
   * One refresh for every request that found `staleToken` refused. True when a fresh access token
   * is in place (perhaps from a refresh another request already made).
   */
  #refreshOnce(staleToken: string): Promise<boolean> {
    if (this.#session !== null && this.#session.accessToken !== staleToken) return Promise.resolve(true);
    this.#refreshing ??= this.refresh()
      .then(() => true)
      .catch((err: unknown) => {
        if (err instanceof SessionLostError) return false;
        throw err;
      })
      .finally(() => {
        this.#refreshing = null;
      });
    return this.#refreshing;
  }

  /**
   * Exchanges the session token for a fresh access token. Rejects with {@link SessionLostError}
   * (and forgets the session) when the server no longer honours it, and with {@link OutageError}
   * when the server cannot read its ledger (the session is kept).
   */
  async refresh(): Promise<SessionTokens> {
    const session = this.#session;
    if (session === null) throw new SessionLostError(localProblem('error.auth.session_invalid', 'Not signed in.'));
    const { data, error, response } = await this.api.POST('/v1/auth/refresh', {
      body: { session_token: session.sessionToken },
    });
    if (data !== undefined) {
      const next = { ...session, accessToken: data.access_token };
      this.#received(next);
      return next;
    }
    const problem = await problemOf(response, error);
    if (problem.code === 'error.auth.session_invalid') {
      this.setSession(null);
      throw new SessionLostError(problem);
    }
    throw errorFor(problem);
  }

  // ---- signing in and out ---------------------------------------------------------------------

  /** Creates an account and signs in to it. */
  async register(address: string, password: string): Promise<SessionTokens> {
    const { data, error, response } = await this.api.POST('/v1/auth/register', { body: { address, password } });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return this.#signedIn(data);
  }

  /** Signs in with a password: a session, or (with a confirmed second factor) a challenge for {@link verifyTotp}. */
  async signIn(address: string, password: string, context: SignInContext = {}): Promise<SignInResult> {
    const ticket = context.signInTicket ?? this.#signInTicket;
    const { data, error, response } = await this.api.POST('/v1/auth/login', {
      body: { address, password, ...signInExtras(context), ...(ticket !== null ? { sign_in_ticket: ticket } : {}) },
    });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    if (response.status === 202 && 'challenge' in data) {
      const extra = data as { challenge: string; expires_in: number; account_id?: string };
      return {
        kind: 'challenge',
        challenge: extra.challenge,
        expiresIn: extra.expires_in,
        ...(extra.account_id ? { accountId: extra.account_id } : {}),
      };
    }
    return { kind: 'session', session: this.#signedIn(data as TokenPairBody) };
  }

  /** Answers a sign-in challenge with a six-digit code from the authenticator app. */
  async verifyTotp(challenge: string, code: string, context: SignInContext = {}): Promise<SessionTokens> {
    const { data, error, response } = await this.api.POST('/v1/auth/login/verify-totp', {
      body: { challenge, code, ...signInExtras(context) },
    });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return this.#signedIn(data);
  }

  #signedIn(pair: TokenPairBody): SessionTokens {
    if (typeof pair.sign_in_ticket === 'string') this.#signInTicket = pair.sign_in_ticket;
    const session = { sessionId: pair.session_id, sessionToken: pair.session_token, accessToken: pair.access_token };
    this.#received(session);
    return session;
  }

  /**
   * Closes every session of the account with the identity key's proof (no session needed; works
   * after the device that holds the session is lost). Returns how many sessions were closed.
   * Fetches the challenge with the current session when there is one.
   */
  async revokeAll(identity: IdentityKey, accountId = this.accountId): Promise<number> {
    if (accountId === null) throw new RangeError('revokeAll needs the account id when signed out');
    const issued = await this.api.POST('/v1/auth/logout/all/challenge', {});
    if (issued.data === undefined) throw this.#errorFor(await problemOf(issued.response, issued.error));
    const signature = identity.signRevokeAll(accountId, issued.data.challenge);
    const { data, error, response } = await this.api.POST('/v1/auth/logout/all', {
      body: { challenge: issued.data.challenge, signature },
    });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    if (this.#session !== null && accountIdOf(this.#session.accessToken) === accountId) this.setSession(null);
    return data.sessions_closed;
  }

  /** Signs this device out: its session is closed on the server and forgotten here. */
  async signOut(): Promise<void> {
    const session = this.#session;
    if (session === null) return;
    const { error, response } = await this.api.DELETE('/v1/auth/sessions/{session_id}', {
      params: { path: { session_id: session.sessionId } },
    });
    // Already closed or expired on the server: signed out all the same.
    if (!response.ok && response.status !== 401 && response.status !== 404)
      throw this.#errorFor(await problemOf(response, error));
    this.setSession(null);
  }

  /**
   * Library sync (`GET /v1/sync`): the account's changes since `cursor` (none: the whole library),
   * page by page, in the order the account's writes committed. Apply each page's changes in order
   * (an upsert's `record` is the object as `GET` answers it now; a removal's is null), then keep
   * the page's `cursor` for the next sync: the iterator ends when the server has no more. A cursor
   * older than the server keeps removals (410 `error.sync.cursor_expired`) is not an error here:
   * the iterator starts again without one, and its next page says `restarted: true`, so the app
   * drops what it holds before applying that page. Pass `actAs` to sync a sponsored account.
   */
  async *sync(
    options: { cursor?: string | null; limit?: number; actAs?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<SyncPage & { restarted: boolean }> {
    let cursor = options.cursor ?? null;
    let restarted = false;
    for (;;) {
      const query: { cursor?: string; limit?: string } = {
        ...(cursor === null ? {} : { cursor }),
        ...(options.limit === undefined ? {} : { limit: String(options.limit) }),
      };
      const header = options.actAs === undefined ? {} : { 'X-Svc-Act-As': options.actAs };
      const { data, error, response } = await this.api.GET('/v1/sync', {
        params: { query, header },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (data === undefined) {
        const problem = await problemOf(response, error);
        if (problem.code === 'error.sync.cursor_expired' && cursor !== null) {
          cursor = null;
          restarted = true;
          continue;
        }
        throw this.#errorFor(problem);
      }
      yield { ...data, restarted };
      restarted = false;
      cursor = data.cursor;
      if (!data.has_more) return;
    }
  }

  /** The account's albums, oldest first, each with its live asset count (`actAs`: a sponsored account's). */
  async albums(options: { actAs?: string } = {}) {
    const header = options.actAs === undefined ? {} : { 'X-Svc-Act-As': options.actAs };
    const { data, error, response } = await this.api.GET('/v1/albums', { params: { header } });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return data.albums;
  }

  /**
   * What a share link covers, for its recipient (no account needed): its live assets with their
   * blobs, page by page (`GET /v1/links/{id}/assets`). A revoked, expired or unknown link is a
   * `StrongroomError` with `error.not_found`.
   */
  async *linkAssets(
    linkId: string,
    options: { limit?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<LinkAssetPage> {
    let cursor: string | null = null;
    for (;;) {
      const query: { cursor?: string; limit?: string } = {
        ...(cursor === null ? {} : { cursor }),
        ...(options.limit === undefined ? {} : { limit: String(options.limit) }),
      };
      const { data, error, response }: { data?: LinkAssetPage; error?: unknown; response: Response } =
        await this.api.GET('/v1/links/{link_id}/assets', {
          params: { path: { link_id: linkId }, query },
          ...(options.signal ? { signal: options.signal } : {}),
        });
      if (data === undefined) throw this.#errorFor(await problemOf(response, error));
      yield data;
      cursor = data.cursor;
      if (!data.has_more) return;
    }
  }

  /**
   * Deletes the account for good (the server needs a recent sign-in: reauthenticate first when the
   * session is older than the window, or this throws `error.auth.reauthentication_required`). Every
   * session, factor, link and asset of the account ends; the session held here is forgotten.
   */
  async deleteAccount(): Promise<void> {
    const { error, response } = await this.api.DELETE('/v1/auth/account');
    if (!response.ok) throw this.#errorFor(await problemOf(response, error));
    this.setSession(null);
  }

  /** The account's open sessions (the current one marked) and its device cohorts. */
  async listSessions() {
    const { data, error, response } = await this.api.GET('/v1/auth/sessions');
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return data;
  }

  /** Closes one of the account's sessions (another device); closing the current one is {@link signOut}. */
  async revokeSession(sessionId: string): Promise<void> {
    if (this.#session?.sessionId === sessionId) return this.signOut();
    const { error, response } = await this.api.DELETE('/v1/auth/sessions/{session_id}', {
      params: { path: { session_id: sessionId } },
    });
    if (!response.ok) throw this.#errorFor(await problemOf(response, error));
  }

  /**
   * Starts an OpenID Connect flow. Keep `verifier` (43 to 128 characters of `[A-Za-z0-9._~-]`, made
   * with {@link newOidcVerifier}) in the app until {@link completeOidc}: the server binds the flow to
   * its hash, so a login code that reaches another app, or another browser, is worth nothing.
   * Open `authorizationUrl` in the system browser.
   */
  async startOidc(options: {
    returnTo: string;
    verifier: string;
    purpose?: 'sign_in' | 'link' | 'reauthenticate';
  }): Promise<{ authorizationUrl: string; expiresIn: number }> {
    const body = {
      return_to: options.returnTo,
      app_challenge: oidcChallenge(options.verifier),
      ...(options.purpose ? { purpose: options.purpose } : {}),
    };
    const { data, error, response } = await this.api.POST('/v1/auth/oidc/start', { body: body as never });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return { authorizationUrl: data.authorization_url, expiresIn: data.expires_in };
  }

  /**
   * Completes a flow with the `login_code` the server sent the app back with. A sign-in returns the
   * new session (and keeps it); a link returns null; a reauthentication returns its instant.
   */
  async completeOidc(
    loginCode: string,
    verifier: string,
    context: SignInContext = {},
  ): Promise<{ session: SessionTokens } | { linked: true } | { reauthenticatedAt: string }> {
    const { data, error, response } = await this.api.POST('/v1/auth/oidc/complete', {
      body: { login_code: loginCode, app_verifier: verifier, ...signInExtras(context) } as never,
    });
    if (!response.ok) throw this.#errorFor(await problemOf(response, error));
    if (response.status === 204 || data === undefined) return { linked: true };
    const body = data as Partial<TokenPairBody> & { reauthenticated_at?: string };
    if (typeof body.reauthenticated_at === 'string') return { reauthenticatedAt: body.reauthenticated_at };
    return { session: this.#signedIn(body as TokenPairBody) };
  }

  // ---- second factor --------------------------------------------------------------------------

  /** Starts TOTP enrollment: the base32 secret and the `otpauth://` URI to show as a QR code. */
  async enrollTotp(): Promise<{ secret: string; uri: string }> {
    const { data, error, response } = await this.api.POST('/v1/auth/totp/enroll', {});
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return data;
  }

  /** Confirms enrollment with a current code; from now on signing in asks for a code. */
  async confirmTotp(code: string): Promise<void> {
    const { error, response } = await this.api.POST('/v1/auth/totp/verify-enrollment', { body: { code } });
    if (!response.ok) throw this.#errorFor(await problemOf(response, error));
  }

  // ---- devices, uploads -----------------------------------------------------------------------

  /** Publishes a directory signed with {@link IdentityKey.signDirectory}. */
  async publishDirectory(signed: Uint8Array): Promise<{ seq: number; devices: number }> {
    const { data, error, response } = await this.api.PUT('/v1/devices/directory', {
      body: signed as never,
      bodySerializer: (body: unknown) => body as BodyInit,
      headers: { 'content-type': 'application/cbor' },
    });
    if (data === undefined) throw this.#errorFor(await problemOf(response, error));
    return { seq: data.seq, devices: data.devices };
  }

  /**
   * Uploads one blob (already encrypted by the app) from bytes in memory, a `Blob`/`File`, a
   * `ReadableStream` or an async iterable of chunks, without ever holding more than one chunk
   * (`chunkSize`, 8 MiB by default) of it: opens a session reserving the size, sends the bytes, and
   * finalizes under their SHA-256.
   *
   * The SHA-256 is computed as the bytes are sent and announced at finalize (the server checks the
   * bytes it holds against it there, and decides a merge), so every source is read exactly once;
   * bytes already in memory are hashed first and announced at creation too. A stream or iterable
   * has to say its length (`size`): the session reserves it before the first byte, and a source that
   * ends early or runs past it is refused (the session is cancelled).
   *
   * The bytes go through the server's resumable route (`PATCH /upload-tus/{id}`, one chunk per
   * request, each with its own `Upload-Checksum`). A chunk whose connection fails is sent again from
   * the offset the server says it holds (tus HEAD, in its GET form), after `retryDelays`; `onProgress` hears each
   * acknowledged chunk. `options.signal` aborts at once and leaves the session open: pass its id
   * (from `onSession`) as `resume`, with the same source from its start, to go on from what the
   * server holds (the bytes it already has are read again here only to hash them).
   *
   * Bytes in memory take the server's direct upload when it offers one (`direct_put`: object
   * storage) with exactly the signed headers, and fall back to the server when the store cannot be
   * reached or refuses them; `direct: false` always sends them through the server. A `Blob` or
   * bytes in memory whose session goes in parts (`multipart`: object storage, above the server's
   * `SVC_S3_PART_BYTES`) go straight to the store a part at a time, each part hashed before it is
   * sent with its own presigned URL; `resume` then sends only the parts the store lacks. A stream
   * or iterable goes through the server (a part's hash is signed before its bytes are sent, and a
   * stream cannot be read twice without holding the part).
   */
  async upload(source: UploadSource, options: UploadOptions): Promise<UploadResult> {
    const signal = options.signal;
    signal?.throwIfAborted();
    const reader = readerOf(source);
    const size = reader.size ?? options.size;
    if (size === undefined || !Number.isSafeInteger(size) || size < 0)
      throw new RangeError('upload() of a stream or iterable needs options.size, its length in bytes');
    if (reader.size !== null && options.size !== undefined && options.size !== reader.size)
      throw new RangeError(`options.size (${options.size}) is not the source's length (${reader.size})`);
    const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) throw new RangeError('chunkSize is a positive whole number');
    const inMemory = source instanceof Uint8Array ? source : null;
    const announced = inMemory === null ? null : sha256Hex(inMemory);
    const progress = (sent: number) => options.onProgress?.({ sent, total: size });
    let uploadId = options.resume ?? null;
    let transfer: UploadResult['transfer'] = 'proxied';
    // Parts need their SHA-256 before they are sent (the URL signs it), so only a source that can
    // be read twice goes in parts: a stream would have to be held a part at a time.
    const ranged = options.direct === false ? null : rangedOf(source);
    try {
      let sent = false;
      /** The server's part plan and the parts the store holds already, when the bytes go in parts. */
      let inParts: { plan: PartPlan; stored: ReadonlySet<number> } | null = null;
      if (uploadId === null) {
        const opened = await this.api.POST('/upload', {
          body: {
            declared_size: size,
            kind: options.kind ?? 'original',
            device_id: options.deviceId,
            ...(announced !== null ? { content_hash: announced } : {}),
            ...(options.albumId ? { album_id: options.albumId } : {}),
          },
          ...(signal ? { signal } : {}),
        });
        if (opened.data === undefined) throw this.#errorFor(await problemOf(opened.response, opened.error));
        uploadId = opened.data.upload_id;
        options.onSession?.(uploadId);
        const offer = options.direct === false ? null : (opened.data.direct_put ?? null);
        if (inMemory !== null && offer !== null && (await this.#sendDirect(offer, inMemory, signal))) {
          transfer = 'direct';
          sent = true;
          progress(size);
        }
        const plan = opened.data.multipart ?? null;
        if (ranged !== null && plan !== null) inParts = { plan, stored: new Set() };
      } else if (ranged !== null) {
        const id = uploadId;
        inParts = await this.#retrying(options, () => this.#partsHeld(id, signal));
      }
      let contentHash = announced;
      if (!sent && inParts !== null) {
        contentHash = await this.#sendParts(
          uploadId,
          ranged!,
          inParts.plan,
          inParts.stored,
          chunkSize,
          options,
          progress,
        );
        transfer = 'direct';
        sent = true;
        if (announced !== null && contentHash !== announced)
          throw errorFor(localProblem('error.integrity', 'The bytes changed while they were sent.'));
      }
      if (!sent) {
        const hashed = await this.#sendResumable(uploadId, reader, size, chunkSize, options, progress);
        contentHash = hashed;
        if (announced !== null && hashed !== announced)
          throw errorFor(localProblem('error.integrity', 'The bytes changed while they were sent.'));
      }
      const done = await this.#retrying(options, async () => {
        const r = await this.api.POST('/upload/{id}/finalize', {
          params: { path: { id: uploadId! } },
          body: {
            content_hash: contentHash!,
            ...(options.assetId ? { manifest: { asset_id: options.assetId } } : {}),
          },
          ...(signal ? { signal } : {}),
        });
        if (r.data === undefined) throw this.#errorFor(await problemOf(r.response, r.error));
        return r.data;
      });
      return { uploadId, state: done.state, assetId: done.asset_id, contentHash: contentHash!, transfer };
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (e instanceof StrongroomError && e.code === 'error.client.size_mismatch' && uploadId !== null)
        await this.api.DELETE('/upload/{id}', { params: { path: { id: uploadId } } }).catch(() => undefined);
      throw e;
    } finally {
      await reader.close();
    }
  }

  /**
   * Sends `reader`'s bytes with tus PATCHes from the offset the server holds, a chunk per request;
   * the bytes the server already holds (a resumed upload) are read and hashed, not sent. The hex
   * SHA-256 of all `size` bytes.
   */
  async #sendResumable(
    uploadId: string,
    reader: SourceReader,
    size: number,
    chunkSize: number,
    options: UploadOptions,
    progress: (sent: number) => void,
  ): Promise<string> {
    const signal = options.signal;
    const url = `${this.#baseUrl}/upload-tus/${encodeURIComponent(uploadId)}`;
    const hash = sha256Hasher.create();
    const short = () =>
      errorFor(localProblem('error.client.size_mismatch', `The source ended before the ${size} bytes it was to hold.`));
    let offset = 0;
    const held = options.resume !== undefined ? await this.#retrying(options, () => this.#tusOffset(url, signal)) : 0;
    while (offset < held) {
      const piece = await reader.read(Math.min(chunkSize, held - offset));
      if (piece.length === 0) throw short();
      hash.update(piece);
      offset += piece.length;
    }
    progress(offset);
    while (offset < size) {
      const chunk = await reader.read(Math.min(chunkSize, size - offset));
      if (chunk.length === 0) throw short();
      const checksum = await chunkChecksum(chunk);
      const body = reader.body(chunk);
      let failures = 0;
      let unmoved = 0;
      for (;;) {
        signal?.throwIfAborted();
        let reached: number;
        try {
          reached = await this.#tusPatch(url, offset, body, checksum, signal);
        } catch (e) {
          if (signal?.aborted || !retryable(e) || failures >= retryDelaysOf(options).length) throw e;
          await pause(retryDelaysOf(options)[failures++]!, signal);
          reached = await this.#retrying(options, () => this.#tusOffset(url, signal)).catch(() => offset);
        }
        if (reached === offset + chunk.length) break;
        // The server still holds `offset` after a 409: sent again, but not forever.
        if (reached === offset && ++unmoved > retryDelaysOf(options).length)
          throw errorFor(localProblem('error.conflict', `The server keeps refusing bytes at ${offset}.`, 409));
        if (reached !== offset)
          throw errorFor(
            localProblem(
              'error.conflict',
              `The server holds ${reached} bytes of this upload, not ${offset} or ${offset + chunk.length}: another sender is at work on it.`,
              409,
            ),
          );
      }
      hash.update(chunk);
      offset += chunk.length;
      progress(offset);
    }
    if ((await reader.read(1)).length > 0)
      throw errorFor(
        localProblem('error.client.size_mismatch', `The source holds more than the ${size} bytes declared.`),
      );
    return bytesToHex(hash.digest());
  }

  /**
   * One tus PATCH: the offset the server holds afterwards. A 409 (another offset, or every byte
   * already in) answers with the server's offset too; a refused token, once refreshed, is sent
   * again. Anything else the server refuses is thrown.
   */
  async #tusPatch(
    url: string,
    offset: number,
    body: Blob | Uint8Array,
    checksum: string | null,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const headers = new Headers({
        'tus-resumable': '1.0.0',
        'upload-offset': String(offset),
        'content-type': 'application/offset+octet-stream',
      });
      if (checksum !== null) headers.set('upload-checksum', `sha256 ${checksum}`);
      const request = new Request(url, {
        method: 'PATCH',
        headers,
        body: body as BodyInit,
        ...(signal ? { signal } : {}),
      });
      const response = await this.#send(request, signal ? { signal } : undefined);
      const reached = Number(response.headers.get('upload-offset') ?? NaN);
      if (response.status === 204 && Number.isSafeInteger(reached)) return reached;
      if (response.status === 409 && Number.isSafeInteger(reached)) {
        await response.body?.cancel();
        return reached;
      }
      const problem = await problemOf(response, null);
      // The pipeline replaced a stale token but does not send bytes twice itself: this loop does.
      if (response.status === 401 && problem.code === 'error.auth.session_invalid' && this.#session && attempt === 0)
        continue;
      throw this.#errorFor(problem);
    }
  }

  /** tus HEAD, as its GET form (a refusal then carries its problem): the bytes the server holds durably. */
  async #tusOffset(url: string, signal: AbortSignal | undefined): Promise<number> {
    const request = new Request(url, {
      method: 'GET',
      headers: { 'tus-resumable': '1.0.0' },
      ...(signal ? { signal } : {}),
    });
    const response = await this.#send(request, signal ? { signal } : undefined);
    const held = Number(response.headers.get('upload-offset') ?? NaN);
    if (response.ok && Number.isSafeInteger(held)) {
      await response.body?.cancel();
      return held;
    }
    throw this.#errorFor(await problemOf(response, null));
  }

  /**
   * Sends a direct upload's parts (S3 multipart) straight to the store, in order, one at a time:
   * each part is read once to hash it (its SHA-256 is signed into its URL, and feeds the whole
   * upload's), and then sent from the source (a Blob slice: the browser streams it from its own
   * storage). Parts the store holds already (a resumed upload) are read and hashed, not sent. A
   * part whose connection drops, or that the store answers with a 5xx, is sent again whole with a
   * fresh URL after each of `retryDelays`: S3 keeps no piece of a part cut midway. The URLs carry
   * their own signature; the access token never goes to the store. The hex SHA-256 of all the bytes.
   */
  async #sendParts(
    uploadId: string,
    source: Uint8Array | Blob,
    plan: PartPlan,
    stored: ReadonlySet<number>,
    chunkSize: number,
    options: UploadOptions,
    progress: (sent: number) => void,
  ): Promise<string> {
    const signal = options.signal;
    const size = source instanceof Uint8Array ? source.length : source.size;
    const whole = sha256Hasher.create();
    let held = 0;
    progress(0);
    for (let n = 1; n <= plan.part_count; n++) {
      const start = (n - 1) * plan.part_size;
      const end = n === plan.part_count ? size : Math.min(size, start + plan.part_size);
      const piece = source instanceof Uint8Array ? source.subarray(start, end) : source.slice(start, end);
      const part = sha256Hasher.create();
      const reader = readerOf(piece);
      try {
        for (;;) {
          signal?.throwIfAborted();
          const bytes = await reader.read(chunkSize);
          if (bytes.length === 0) break;
          part.update(bytes);
          whole.update(bytes);
        }
      } finally {
        await reader.close();
      }
      if (!stored.has(n)) await this.#sendPart(uploadId, n, bytesToHex(part.digest()), piece, options);
      held += end - start;
      progress(held);
    }
    return bytesToHex(whole.digest());
  }

  /** One part: a fresh URL from the server, then the bytes to the store, tried again while it fails for a passing reason. */
  async #sendPart(
    uploadId: string,
    partNumber: number,
    sha256: string,
    body: Uint8Array | Blob,
    options: UploadOptions,
  ): Promise<void> {
    const signal = options.signal;
    const delays = retryDelaysOf(options);
    for (let failures = 0; ; failures++) {
      const url = await this.#retrying(options, async () => {
        const r = await this.api.POST('/upload/{id}/parts', {
          params: { path: { id: uploadId } },
          body: { parts: [{ part_number: partNumber, sha256 }] },
          ...(signal ? { signal } : {}),
        });
        if (r.data === undefined) throw this.#errorFor(await problemOf(r.response, r.error));
        return r.data.parts[0]!;
      });
      // Only the signed headers; the fetch API sets Content-Length from the body (browsers refuse it as a header).
      const headers = new Headers(
        Object.entries(url.headers).filter(([name]) => name.toLowerCase() !== 'content-length'),
      );
      let failure: StrongroomError;
      try {
        const r = await this.#fetch(
          new Request(url.url, { method: url.method, headers, body: body as BodyInit }),
          signal ? { signal } : undefined,
        );
        const text = await r.text();
        if (r.ok) return;
        const store = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'no code';
        const problem = localProblem(
          r.status >= 500 ? 'error.store.unavailable' : 'error.integrity',
          `The object store refused part ${partNumber} (${r.status} ${store}).`,
          r.status,
        );
        // A 4xx is the store judging these bytes against their signature: sending them again cannot help.
        if (r.status < 500) throw errorFor(problem);
        failure = errorFor(problem);
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        if (e instanceof StrongroomError) throw e;
        failure = new OutageError(
          localProblem(
            'error.client.unreachable',
            `The object store could not be reached for part ${partNumber}: ${(e as Error)?.message ?? String(e)}`,
          ),
        );
      }
      if (failures >= delays.length) throw failure;
      await pause(delays[failures]!, signal);
    }
  }

  /**
   * A resumed session's part plan and the parts the store holds whole (`GET /upload/{id}/parts`);
   * null for a session that does not go in parts (409), whose bytes go by tus.
   */
  async #partsHeld(
    uploadId: string,
    signal: AbortSignal | undefined,
  ): Promise<{ plan: PartPlan; stored: ReadonlySet<number> } | null> {
    const r = await this.api.GET('/upload/{id}/parts', {
      params: { path: { id: uploadId } },
      ...(signal ? { signal } : {}),
    });
    if (r.data !== undefined)
      return {
        plan: { part_size: r.data.part_size, part_count: r.data.part_count },
        stored: new Set(r.data.stored.map((p) => p.part_number)),
      };
    const problem = await problemOf(r.response, r.error);
    if (problem.code === 'error.conflict') return null;
    throw this.#errorFor(problem);
  }

  /** `step`, tried again after each delay of `retryDelays` while it fails for a reason that may pass. */
  async #retrying<T>(options: UploadOptions, step: () => Promise<T>): Promise<T> {
    const delays = retryDelaysOf(options);
    for (let failures = 0; ; failures++) {
      try {
        return await step();
      } catch (e) {
        if (options.signal?.aborted || !retryable(e) || failures >= delays.length) throw e;
        await pause(delays[failures]!, options.signal);
      }
    }
  }

  /**
   * Sends `bytes` to a presigned upload URL with its signed headers (never the access token):
   * true when the store took them. A store that cannot be reached or refuses is false, so the
   * caller falls back to the server; an abort is not a reason to try again.
   */
  async #sendDirect(
    offer: { url: string; method: string; headers: Record<string, string> },
    bytes: Uint8Array,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    // The fetch API sets Content-Length from the body itself (browsers refuse it as a header).
    const headers = new Headers(
      Object.entries(offer.headers).filter(([name]) => name.toLowerCase() !== 'content-length'),
    );
    try {
      const r = await this.#fetch(
        new Request(offer.url, { method: offer.method, headers, body: bytes as BodyInit }),
        signal ? { signal } : undefined,
      );
      await r.body?.cancel();
      return r.ok;
    } catch (e) {
      if (signal?.aborted) throw e;
      return false;
    }
  }

  /**
   * Downloads a blob: as the signed-in account (`GET /v1/blobs/{hash}`), or through a share link
   * (`options.linkId`, no token). Follows the server's 307 to a presigned object-store URL by
   * itself, sending that URL only the Range (never the access token), so a proxied and a
   * redirected download look the same. Refusals reject with {@link StrongroomError}
   * (`error.not_found`, `error.request.range_not_satisfiable`, …).
   */
  async download(contentHash: string, options: DownloadOptions = {}): Promise<BlobDownload> {
    const path =
      options.linkId === undefined
        ? `/v1/blobs/${encodeURIComponent(contentHash)}`
        : `/v1/links/${encodeURIComponent(options.linkId)}/blobs/${encodeURIComponent(contentHash)}`;
    const headers = new Headers();
    if (options.range !== undefined) headers.set('range', rangeHeader(options.range));
    if (options.actAs !== undefined) headers.set('x-svc-act-as', options.actAs);
    const init: RequestInit = { redirect: 'manual', ...(options.signal ? { signal: options.signal } : {}) };
    const request = new Request(this.#baseUrl + path, { method: 'GET', headers, ...init });
    let response =
      options.linkId === undefined
        ? await this.#send(request, init)
        : await this.#call(this.#prepare(request, null), init);
    if (response.type === 'opaqueredirect') {
      // A browser hides a manual redirect's Location: let it follow. The first hop is this server's
      // own route, which needs the access token again; a browser drops Authorization when the
      // redirect crosses to another origin (the object store), so the store never sees it.
      const token = options.linkId === undefined ? (this.#session?.accessToken ?? null) : null;
      response = await this.#call(this.#prepare(new Request(request, { redirect: 'follow' }), token), {
        ...init,
        redirect: 'follow',
      });
    } else if (response.status === 307 || response.status === 302 || response.status === 303) {
      const location = response.headers.get('location');
      await response.body?.cancel();
      if (location === null)
        throw errorFor(localProblem('error.internal', 'A redirect without a Location.', response.status));
      const onward = new Headers();
      if (options.range !== undefined) onward.set('range', rangeHeader(options.range));
      response = await this.#call(
        new Request(new URL(location, this.#baseUrl + path), { method: 'GET', headers: onward }),
        options.signal ? { signal: options.signal } : undefined,
      );
    }
    if (response.status !== 200 && response.status !== 206) throw this.#errorFor(await problemOf(response, null));
    if (response.body === null)
      throw errorFor(localProblem('error.internal', 'A download without a body.', response.status));
    const length = Number(response.headers.get('content-length') ?? NaN);
    if (response.status === 206) {
      const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
      if (m === null)
        throw errorFor(localProblem('error.internal', 'A partial answer without a usable Content-Range.', 206));
      return { status: 206, start: Number(m[1]), end: Number(m[2]), size: Number(m[3]), body: response.body };
    }
    const size = Number.isFinite(length) ? length : -1;
    return { status: 200, start: 0, end: size - 1, size, body: verified(response.body, contentHash) };
  }
}

/** One page of library changes (`GET /v1/sync`). */
export type SyncPage = components['schemas']['SyncPage'];
/** One page of what a share link covers (`GET /v1/links/{link_id}/assets`). */
export type LinkAssetPage = components['schemas']['LinkAssetPage'];

/** What {@link StrongroomClient.download} reads: all of a blob, or one range of it. */
export type DownloadRange = { readonly start: number; readonly end?: number } | { readonly suffix: number };

/** How {@link StrongroomClient.download} reads: as whom, which bytes. */
export interface DownloadOptions {
  /** Read through this share link (anonymously) instead of as the signed-in account. */
  readonly linkId?: string;
  /** One byte range (end inclusive); absent: the whole blob. */
  readonly range?: DownloadRange;
  /** Act as this sponsored account (X-Svc-Act-As). */
  readonly actAs?: string;
  readonly signal?: AbortSignal;
}

/** A blob on its way in. `body` streams; read it to the end or cancel it. */
export interface BlobDownload {
  /** 200 for the whole blob, 206 for a range. */
  readonly status: 200 | 206;
  /** The whole blob's size in bytes. */
  readonly size: number;
  /** The bytes `body` carries: the range asked for (end inclusive), or all of them. */
  readonly start: number;
  readonly end: number;
  /**
   * The bytes. A whole download is checked against the content hash as it streams: a body that
   * does not hash to it errors at its end instead of closing (a tampered or truncated copy,
   * wherever a redirect led).
   */
  readonly body: ReadableStream<Uint8Array>;
}

/** How a direct upload in parts is cut: every part `part_size` bytes but the last. */
interface PartPlan {
  readonly part_size: number;
  readonly part_count: number;
}

/** A source that can be read twice (by slices), or null for a stream or iterable. */
function rangedOf(source: UploadSource): Uint8Array | Blob | null {
  if (source instanceof Uint8Array) return source;
  if (typeof Blob !== 'undefined' && source instanceof Blob) return source;
  return null;
}

function retryDelaysOf(options: UploadOptions): readonly number[] {
  return options.retryDelays ?? DEFAULT_RETRY_DELAYS;
}

/** A failure worth another try: no answer (a cut connection, an outage) or the server's own 5xx. */
function retryable(e: unknown): boolean {
  return e instanceof OutageError || (e instanceof StrongroomError && e.status >= 500);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** tus Upload-Checksum's value for a chunk (base64 SHA-256), by the platform's native digest; null without one. */
async function chunkChecksum(chunk: Uint8Array): Promise<string | null> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) return null;
  return toBase64(new Uint8Array(await subtle.digest('SHA-256', chunk as BufferSource)));
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
function toBase64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += BASE64[(n >> 18) & 63]! + BASE64[(n >> 12) & 63]!;
    out += i + 1 < bytes.length ? BASE64[(n >> 6) & 63]! : '=';
    out += i + 2 < bytes.length ? BASE64[n & 63]! : '=';
  }
  return out;
}

function rangeHeader(range: DownloadRange): string {
  if ('suffix' in range) return `bytes=-${range.suffix}`;
  return `bytes=${range.start}-${range.end ?? ''}`;
}

/** Passes the bytes through and errors at the end unless they hash to `contentHash`. */
function verified(body: ReadableStream<Uint8Array>, contentHash: string): ReadableStream<Uint8Array> {
  const hash = sha256Hasher.create();
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        hash.update(chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        if (bytesToHex(hash.digest()) !== contentHash)
          controller.error(
            new StrongroomError(
              localProblem('error.integrity', 'The downloaded bytes do not hash to the content hash.'),
            ),
          );
      },
    }),
  );
}

interface TokenPairBody {
  readonly session_id: string;
  readonly session_token: string;
  readonly access_token: string;
  readonly sign_in_ticket?: string;
}

function signInExtras(context: SignInContext): Record<string, string> {
  return {
    ...(context.cohortHash ? { cohort_hash: context.cohortHash } : {}),
    ...(context.deviceId ? { device_id: context.deviceId } : {}),
  };
}

/** The problem of a failed call (parsed by openapi-fetch as `error`), or a stand-in for a bare status. */
async function problemOf(response: Response, error: unknown): Promise<Problem> {
  if (error !== null && typeof error === 'object' && typeof (error as Problem).code === 'string')
    return error as Problem;
  return (
    (await readProblem(response)) ??
    localProblem('error.internal', `Unexpected answer ${response.status}.`, response.status)
  );
}

function localProblem(code: string, detail: string, status = 0): Problem {
  return { type: 'about:blank', title: 'Client', status, code, detail };
}

/** The claims of an access token (not verified: only the server trusts tokens). */
function claimsOf(accessToken: string): { sub?: unknown; exp?: unknown; iat?: unknown } | null {
  const payload = accessToken.split('.')[1];
  if (payload === undefined) return null;
  try {
    const bytes = fromBase64url(payload);
    if (bytes === null) return null;
    return JSON.parse(new TextDecoder().decode(bytes)) as { sub?: unknown; exp?: unknown; iat?: unknown };
  } catch {
    return null;
  }
}

function isJson(contentType: string | null): boolean {
  return contentType !== null && /^application\/(?:[\w.+-]+\+)?json\s*(;|$)/i.test(contentType);
}

function isCbor(contentType: string | null): boolean {
  return contentType !== null && /^application\/cbor\s*(;|$)/i.test(contentType);
}

/** The `sub` claim of an access token. */
function accountIdOf(accessToken: string): string | null {
  const sub = claimsOf(accessToken)?.sub;
  return typeof sub === 'string' ? sub : null;
}

/** The unpadded base64url SHA-256 of an app's OpenID verifier: the `app_challenge` (RFC 7636 S256). */
export function oidcChallenge(verifier: string): string {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier))
    throw new RangeError('an OpenID app verifier is 43 to 128 characters of [A-Za-z0-9._~-]');
  return toBase64url(sha256(new TextEncoder().encode(verifier)));
}

/** A fresh OpenID app verifier: 32 random bytes, base64url (43 characters). */
export function newOidcVerifier(): string {
  return toBase64url(globalThis.crypto.getRandomValues(new Uint8Array(32)));
}
