import type { Context } from 'hono';
import type { Result } from '@strongroom/core';
import { HttpProblem, type ProblemCode } from './problem.js';

/** RFC 3339 UTC with milliseconds, the wire form of every timestamp. */
export const iso = (ms: number): string => new Date(ms).toISOString();
export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

/** The value of a successful Result, or the refusal thrown as problem details. */
export function unwrap<T>(result: Result<T>, overrides: Partial<Record<ProblemCode, number>> = {}): T {
  if (result.ok) return result.value;
  throw HttpProblem.from(result, overrides);
}

export function json(c: Context, status: number, body: unknown): Response {
  return c.body(JSON.stringify(body), status as 200, { 'content-type': 'application/json' });
}

export function noContent(c: Context): Response {
  return c.body(null, 204);
}
