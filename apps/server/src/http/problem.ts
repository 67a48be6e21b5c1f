import type { ErrorCode, Refusal } from '@strongroom/core';

/** Codes only the HTTP layer produces (the router and the body reader). */
export type HttpOnlyCode = 'error.request.too_large' | 'error.request.unsupported_media_type' | 'error.request.method_not_allowed'
  | 'error.server.shutting_down';
export type ProblemCode = ErrorCode | HttpOnlyCode;

/**
 * The one place where codes become HTTP statuses. A route may override a status for a code where
 * the contract gives the same code two statuses (a wrong password is 401 at login, 403 on change).
 */
export const STATUS: Record<ProblemCode, number> = {
  'error.request.invalid': 400,
  'error.request.too_large': 413,
  'error.request.unsupported_media_type': 415,
  'error.request.method_not_allowed': 405,
  'error.not_found': 404,
  'error.conflict': 409,
  'error.auth.user_already_exists': 409,
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
  'error.internal': 500,
  /** A request that reached a kept-alive connection after SIGTERM (main.ts). */
  'error.server.shutting_down': 503,
};

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  426: 'Upgrade Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A refusal on its way out as RFC 9457 problem details. Thrown by handlers, rendered by onError. */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem';
  /** Extra response headers (Allow on a 405). */
  headers: Record<string, string> = {};
  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly data: Readonly<Record<string, unknown>> = {},
    readonly status: number = STATUS[code] ?? 500,
  ) {
    super(`${code}: ${detail}`);
  }

  static from(refusal: Refusal, overrides: Partial<Record<ProblemCode, number>> = {}): HttpProblem {
    return new HttpProblem(refusal.code, refusal.detail ?? refusal.code, refusal.data ?? {}, overrides[refusal.code] ?? STATUS[refusal.code]);
  }
}

export function problemBody(p: HttpProblem): Record<string, unknown> {
  return { type: 'about:blank', title: TITLES[p.status] ?? 'Error', status: p.status, code: p.code, detail: p.detail, ...p.data };
}

/** Problem details as a response; `headers` carries the protocol headers. */
export function problemResponse(p: HttpProblem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problemBody(p)), {
    status: p.status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
}
