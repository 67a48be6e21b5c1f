/**
 * Domain errors.
 *
 * Expected outcomes (a wrong password, a taken address, an exhausted challenge) are returned as a
 * {@link Refusal}: a plain value with a stable `code`, so callers must handle them. Broken
 * invariants and unreachable ports are thrown as {@link CoreError}. Core never knows about HTTP:
 * the server maps codes to statuses in one table.
 */

/** Every stable code a refusal or a CoreError can carry. */
export type ErrorCode =
  | 'error.request.invalid'
  | 'error.sync.cursor_expired'
  | 'error.not_found'
  | 'error.conflict'
  | 'error.auth.user_already_exists'
  | 'error.auth.registration_closed'
  | 'error.auth.weak_password'
  | 'error.auth.invalid_credentials'
  | 'error.auth.account_locked'
  | 'error.auth.session_invalid'
  | 'error.auth.unavailable'
  | 'error.auth.invalid_code'
  | 'error.auth.challenge_invalid'
  | 'error.auth.challenge_exhausted'
  | 'error.auth.totp_already_enrolled'
  | 'error.auth.totp_not_enrolled'
  | 'error.auth.proof_invalid'
  | 'error.profile.invalid_display_name'
  | 'error.protocol.unsupported'
  | 'error.protocol.below_min'
  | 'error.protocol.below_album_pin'
  | 'error.quota.exceeded'
  | 'error.quota.write_refused'
  | 'error.upload.too_large'
  | 'error.upload.checksum_mismatch'
  | 'error.upload.tus_version'
  | 'error.upload.album_quiescing'
  | 'error.device.unknown'
  | 'error.device.invalid_key'
  | 'error.device.directory_invalid'
  | 'error.album.upgrade_in_flight'
  | 'error.album.proposer_invalid'
  | 'error.album.intent_mismatch'
  | 'error.catalog.too_new'
  | 'error.store.unavailable'
  | 'error.server.busy'
  | 'error.internal'
  | 'error.auth.throttled'
  | 'error.auth.local_disabled'
  | 'error.auth.no_local_password'
  | 'error.auth.last_sign_in_method'
  | 'error.auth.reauthentication_required'
  | 'error.request.too_many'
  | 'error.auth.not_the_initiator'
  | 'error.auth.login_code_invalid'
  | 'error.oidc.return_to_invalid'
  | 'error.oidc.app_challenge_required'
  | 'error.oidc.state_invalid'
  | 'error.oidc.provider_denied'
  | 'error.oidc.exchange_failed'
  | 'error.oidc.id_token_invalid'
  | 'error.oidc.reauthentication_stale'
  | 'error.oidc.already_linked'
  | 'error.deprecation.invalid'
  | 'error.deprecation.too_soon'
  | 'error.attestation.history_invalid'
  | 'error.auth.not_an_owner'
  | 'error.sponsored.cannot_sponsor'
  | 'error.sponsored.no_identity'
  | 'error.quota.federated_budget'
  | 'error.discovery.handle_taken'
  | 'error.discovery.handle_fixed'
  | 'error.discovery.no_handle'
  | 'error.federation.capability_invalid'
  | 'error.federation.unknown_peer'
  | 'error.federation.peer_unavailable'
  | 'error.federation.rate_limited'
  | 'error.request.too_many';

/** An expected "no": the operation did not happen and nothing changed. */
export interface Refusal<C extends ErrorCode = ErrorCode> {
  readonly ok: false;
  readonly code: C;
  readonly detail?: string;
  /** Extra members the client needs (`attempts_left`, `live_intent_id`, ...). */
  readonly data?: Readonly<Record<string, unknown>>;
}

export interface Success<T> {
  readonly ok: true;
  readonly value: T;
}

export type Result<T, C extends ErrorCode = ErrorCode> = Success<T> | Refusal<C>;

export function ok<T>(value: T): Success<T> {
  return { ok: true, value };
}

export function refuse<C extends ErrorCode>(code: C, detail?: string, data?: Record<string, unknown>): Refusal<C> {
  return { ok: false, code, ...(detail === undefined ? {} : { detail }), ...(data === undefined ? {} : { data }) };
}

/**
 * Why a store could not be used, as far as its adapter can tell from the driver's error: it did
 * not answer (refused, timed out, unknown host), it answered but refused this server's
 * credentials, or it answered with some other error. Readiness names it, so an operator looks at
 * the right thing (a key, not the network).
 */
export type StoreFault = 'unreachable' | 'credentials' | 'failed';

/** Thrown for faults: an unreachable store, a broken invariant. Carries the underlying `cause`. */
export class CoreError extends Error {
  override readonly name = 'CoreError';
  readonly code: ErrorCode;
  /** Set by an adapter that could tell why its store failed. */
  readonly fault: StoreFault | undefined;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; fault?: StoreFault }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.fault = options?.fault;
  }
}

/**
 * Runs a port call and turns any failure into a CoreError with the given code, so a broken store
 * surfaces as a typed fault (and fails closed) instead of an arbitrary driver exception.
 */
export async function guard<T>(code: ErrorCode, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (cause) {
    if (cause instanceof CoreError) throw cause;
    throw new CoreError(code, `${what} failed`, { cause });
  }
}
