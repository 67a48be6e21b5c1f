/**
 * What the log may say about a failure a request or a store ran into.
 *
 * A failed statement's error, as drizzle raises it, quotes the statement with its parameters:
 * a share or upload link's id (a bearer capability), a session token's hash, an address. Logs
 * never hold those (spec §17.8), so the statement's error is
 * described by what the database said about it, and even that only in part: PostgreSQL quotes the
 * offending value in some messages (`invalid input syntax for type uuid: "…"`), so its message is
 * kept only for the classes of error that are about the connection or the server, not the data.
 */
export function failureForLog(err: unknown): string {
  const seen = new Set<unknown>();
  let current: unknown = err;
  // Walk past wrappers (a CoreError around the store's error, drizzle's around the driver's) to
  // the error the driver or the system raised.
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    if (isStatementWrapper(current) || (current.cause instanceof Error && !isDatabaseError(current))) {
      // A statement's wrapper says nothing of its own that the log may keep.
      if (isStatementWrapper(current) && !(current.cause instanceof Error)) return 'a statement failed';
      current = current.cause;
      continue;
    }
    break;
  }
  if (isDatabaseError(current)) {
    const { code, severity } = current;
    return SAFE_CLASSES.has(code.slice(0, 2))
      ? `postgres ${severity} ${code}: ${current.message}`
      : `postgres ${severity} ${code}`;
  }
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code;
    return `${current.name}${typeof code === 'string' ? ` ${code}` : ''}: ${current.message}`;
  }
  return String(current);
}

/**
 * SQLSTATE classes whose messages name no value from a statement: connection exception (08),
 * transaction rollback (40: serialization, deadlock), insufficient resources (53), program limit
 * (54), object not in prerequisite state (55: lock not available), operator intervention (57:
 * statement timeout, admin shutdown), system error (58), configuration file error (F0), internal
 * error (XX).
 */
const SAFE_CLASSES = new Set(['08', '40', '53', '54', '55', '57', '58', 'F0', 'XX']);

/** node-postgres's DatabaseError: a server's answer with its SQLSTATE. */
function isDatabaseError(e: unknown): e is Error & { code: string; severity: string } {
  if (!(e instanceof Error)) return false;
  const { code, severity } = e as { code?: unknown; severity?: unknown };
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
}

/** drizzle's DrizzleQueryError: "Failed query: <sql>\nparams: <values>" around the driver's error. */
function isStatementWrapper(e: Error): boolean {
  return 'params' in e && 'query' in e;
}
