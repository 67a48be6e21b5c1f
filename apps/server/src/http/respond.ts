import type { Context } from 'hono';
import type { Result } from '@strongroom/core';
import { HttpProblem, type ProblemCode } from './problem.js';
import { stamped } from './stamped.js';

/** RFC 3339 UTC with milliseconds, the wire form of every timestamp. */
export const iso = (ms: number): string => new Date(ms).toISOString();
export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

/** The value of a successful Result, or the refusal thrown as problem details. */
export function unwrap<T>(result: Result<T>, overrides: Partial<Record<ProblemCode, number>> = {}): T {
  if (result.ok) return result.value;
  throw HttpProblem.from(result, overrides);
}

/** The protocol headers the app's fetch wrapper passes in the environment. */
function protocolHeadersOf(c: Context): Record<string, string> {
  return (c.env as { protocolHeaders?: Record<string, string> } | undefined)?.protocolHeaders ?? {};
}

export function json(c: Context, status: number, body: unknown): Response {
  const res = new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...protocolHeadersOf(c) } });
  stamped.add(res);
  return res;
}

export function noContent(c: Context): Response {
  const res = new Response(null, { status: 204, headers: protocolHeadersOf(c) });
  stamped.add(res);
  return res;
}
