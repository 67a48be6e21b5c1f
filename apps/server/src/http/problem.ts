import type { ErrorCode, Refusal } from '@strongroom/core';

/** Codes only the HTTP layer produces (the router and the body reader). */
export type HttpOnlyCode =
  | 'error.request.too_large'
  | 'error.request.unsupported_media_type'
  | 'error.request.method_not_allowed'
  | 'error.server.shutting_down'
  | 'error.request.range_not_satisfiable'
  | 'error.request.headers_too_large'
  | 'error.request.timeout';
export type ProblemCode = ErrorCode | HttpOnlyCode;

/**
 * The one place where codes become HTTP statuses: one status per code, and below it the few places
 * where the specification gives a code another status, each named (a route asks for its context by
 * name; no route spells a status).
 */
export const STATUS: Record<ProblemCode, number> = {
  'error.request.invalid': 400,
  'error.sync.cursor_expired': 410,
  'error.request.too_large': 413,
  'error.request.unsupported_media_type': 415,
  'error.request.method_not_allowed': 405,
  'error.not_found': 404,
  'error.conflict': 409,
  'error.auth.user_already_exists': 409,
  'error.auth.registration_closed': 403,
  'error.auth.weak_password': 400,
  'error.auth.invalid_credentials': 401,
  'error.auth.account_locked': 403,
  'error.auth.session_invalid': 401,
  'error.auth.unavailable': 503,
  'error.auth.invalid_code': 401,
  'error.auth.challenge_invalid': 401,
  'error.auth.challenge_exhausted': 429,
  'error.auth.totp_already_enrolled': 409,
  'error.auth.totp_not_enrolled': 409,
  'error.auth.proof_invalid': 401,
  'error.profile.invalid_display_name': 400,
  'error.protocol.unsupported': 426,
  'error.protocol.below_min': 426,
  'error.protocol.below_album_pin': 426,
  'error.quota.exceeded': 403,
  'error.quota.write_refused': 403,
  'error.upload.too_large': 413,
  /** tus 1.0's checksum extension: 460 Checksum Mismatch, so a tus client knows the chunk was refused. */
  'error.upload.checksum_mismatch': 460,
  /** A tus request without `Tus-Resumable: 1.0.0`: 412 Precondition Failed, as tus 1.0 asks. */
  'error.upload.tus_version': 412,
  'error.upload.album_quiescing': 409,
  'error.device.unknown': 403,
  'error.device.invalid_key': 400,
  'error.device.directory_invalid': 400,
  'error.album.upgrade_in_flight': 409,
  'error.album.proposer_invalid': 403,
  'error.album.intent_mismatch': 400,
  /** Client-side only (the catalog migrator); never sent by the server. */
  'error.catalog.too_new': 409,
  'error.store.unavailable': 503,
  'error.server.busy': 503,
  'error.internal': 500,
  'error.auth.throttled': 429,
  'error.auth.local_disabled': 403,
  'error.auth.no_local_password': 409,
  'error.auth.last_sign_in_method': 409,
  'error.auth.reauthentication_required': 403,
  'error.request.too_many': 429,
  'error.auth.not_the_initiator': 403,
  'error.auth.login_code_invalid': 401,
  'error.oidc.return_to_invalid': 400,
  'error.oidc.app_challenge_required': 400,
  'error.oidc.state_invalid': 400,
  /** The next four reach the client as `?error=` on the callback's redirect, not as problem bodies. */
  'error.oidc.provider_denied': 400,
  'error.oidc.exchange_failed': 400,
  'error.oidc.id_token_invalid': 400,
  'error.oidc.reauthentication_stale': 400,
  'error.oidc.already_linked': 409,
  /** Operator CLI only (deprecate): never sent over HTTP. */
  'error.deprecation.invalid': 400,
  'error.deprecation.too_soon': 400,
  /** Stops the start (a broken attestation history); never sent over HTTP. */
  'error.attestation.history_invalid': 500,
  'error.auth.not_an_owner': 403,
  'error.sponsored.cannot_sponsor': 403,
  'error.sponsored.no_identity': 403,
  'error.quota.federated_budget': 403,
  'error.discovery.handle_taken': 409,
  'error.discovery.handle_fixed': 409,
  'error.discovery.no_handle': 409,
  'error.federation.capability_invalid': 401,
  'error.federation.unknown_peer': 404,
  'error.federation.peer_unavailable': 502,
  'error.federation.rate_limited': 429,
  /** A request that reached a kept-alive connection after SIGTERM (main.ts). */
  'error.server.shutting_down': 503,
  /** A blob download's Range lies wholly outside the blob (answered with Content-Range naming the size). */
  'error.request.range_not_satisfiable': 416,
  /** Refused by Node's HTTP parser before any handler (http/client-error.ts): headers past its limit, or not in time. */
  'error.request.headers_too_large': 431,
  'error.request.timeout': 408,
};

/** Where the specification gives a code a second status. */
export const CONTEXT_STATUS = {
  /** On an authenticated request, an unreadable ledger is a 401 so the client refreshes (spec §4.6). */
  authenticating: { 'error.auth.unavailable': 401 },
  /** Re-confirming the password of a signed-in session: a wrong one is 403, never 401 (spec §3.13, §3.14). */
  reconfirming: { 'error.auth.invalid_credentials': 403 },
  /** Confirming or disabling a second factor from a session: a wrong or replayed code is 400 (verify-totp keeps 401). */
  managingFactor: { 'error.auth.invalid_code': 400 },
  /** A federated fill naming a peer this server does not federate with is refused, not unknown (decisions: federated blobs). */
  federatedFill: { 'error.federation.unknown_peer': 403 },
} as const satisfies Record<string, Partial<Record<ProblemCode, number>>>;
export type StatusContext = keyof typeof CONTEXT_STATUS;

/** The status of a code, in a named context where the specification gives it another. */
export function statusOf(code: ProblemCode, context?: StatusContext): number {
  const special =
    context === undefined ? undefined : (CONTEXT_STATUS[context] as Partial<Record<ProblemCode, number>>)[code];
  return special ?? STATUS[code] ?? 500;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  426: 'Upgrade Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  460: 'Checksum Mismatch',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** The title of a peer's refusal passed on, whatever its status: the refusal is not this server's. */
const RELAYED_TITLE = 'Refused by the peer server';

/** A refusal on its way out as RFC 9457 problem details. Thrown by handlers, rendered by onError. */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem';
  /** Extra response headers (Allow on a 405). */
  headers: Record<string, string> = {};
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly data: Readonly<Record<string, unknown>> = {},
    context?: StatusContext,
  ) {
    super(`${code}: ${detail}`);
    this.status = statusOf(code, context);
  }

  /**
   * A peer server's refusal passed back to our caller (decisions: federation): its status and code
   * are the peer's, not ours to map; the words are ours (`detail` here, the title in problemBody),
   * and nothing else of the peer's body comes along.
   */
  static relayed(code: ProblemCode, detail: string, status: number): HttpProblem {
    const p = new HttpProblem(code, detail);
    (p as { status: number }).status = status;
    (p as { relayedFromPeer: boolean }).relayedFromPeer = true;
    return p;
  }

  /** A peer's refusal passed on (`relayed`): its status is the peer's, in any context. */
  readonly relayedFromPeer: boolean = false;

  /** The same problem with its status taken in a named context (a peer's refusal keeps the peer's). */
  inContext(context: StatusContext): HttpProblem {
    if (this.relayedFromPeer) return this;
    const p = new HttpProblem(this.code, this.detail, this.data, context);
    p.headers = this.headers;
    return p;
  }

  /**
   * A refusal as problem details. A refusal that says when to come back (`retry_after_s`, as the
   * second-factor throttle and the federation limit do) says it in `Retry-After`, not the body.
   */
  static from(refusal: Refusal, context?: StatusContext): HttpProblem {
    const data = refusal.data ?? {};
    if (data.retry_after_s === undefined)
      return new HttpProblem(refusal.code, refusal.detail ?? refusal.code, data, context);
    const { retry_after_s: retryAfter, ...rest } = data;
    const p = new HttpProblem(refusal.code, refusal.detail ?? refusal.code, rest, context);
    p.headers = { 'retry-after': String(retryAfter) };
    return p;
  }
}

export function problemBody(p: HttpProblem): Record<string, unknown> {
  const title = p.relayedFromPeer ? RELAYED_TITLE : (TITLES[p.status] ?? 'Error');
  return { type: 'about:blank', title, status: p.status, code: p.code, detail: p.detail, ...p.data };
}

/** Problem details as a response; `headers` carries the protocol headers. */
export function problemResponse(p: HttpProblem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problemBody(p)), {
    status: p.status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
}
