/**
 * RFC 9457 problem details as the server sends them: `code` is the stable part to branch on;
 * extra members (`attempts_left`, `supported_min`, `live_intent_id`, …) carry data the client needs.
 */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly [member: string]: unknown;
}

/** Codes that mean the server could not reach its own database: retry later, nothing was changed. */
const OUTAGE_CODES: ReadonlySet<string> = new Set(['error.auth.unavailable', 'error.store.unavailable']);

/** A refusal from the server, carrying its problem details. */
export class StrongroomError extends Error {
  override readonly name: string = 'StrongroomError';
  /** The stable problem code, e.g. `error.auth.invalid_credentials`. */
  readonly code: string;
  readonly status: number;
  constructor(readonly problem: Problem) {
    super(`${problem.code}: ${problem.detail}`);
    this.code = problem.code;
    this.status = problem.status;
  }
}

/**
 * The server is up but cannot read its session ledger or another store (`error.auth.unavailable`,
 * `error.store.unavailable`). This is an outage, not an expired session: the client keeps its
 * tokens and does not try to refresh; show "try again shortly" and retry later.
 */
export class OutageError extends StrongroomError {
  override readonly name: string = 'OutageError';
}

/** The session is gone for good (revoked, expired, closed by revoke-all): sign in again. */
export class SessionLostError extends StrongroomError {
  override readonly name: string = 'SessionLostError';
}

/** True for the codes that mean a server-side outage (see {@link OutageError}). */
export function isOutageCode(code: string): boolean {
  return OUTAGE_CODES.has(code);
}

/** Reads problem details from a response, or null when the body is not problem+json. */
export async function readProblem(response: Response): Promise<Problem | null> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('application/problem+json')) return null;
  try {
    const body = (await response.clone().json()) as Problem;
    return typeof body?.code === 'string' ? body : null;
  } catch {
    return null;
  }
}

/** The error to throw for a problem: an {@link OutageError} for outage codes, else a {@link StrongroomError}. */
export function errorFor(problem: Problem): StrongroomError {
  return isOutageCode(problem.code) ? new OutageError(problem) : new StrongroomError(problem);
}
