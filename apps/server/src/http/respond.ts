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

/** The protocol headers the app's fetch wrapper passes in the environment. */
function protocolHeadersOf(c: Context): Record<string, string> {
  return (c.env as { protocolHeaders?: Record<string, string> } | undefined)?.protocolHeaders ?? {};
}

// Every response goes through one of these (or problemResponse), so every one carries the protocol
// headers. The headers are a plain object: @hono/node-server writes those straight to the socket,
// where `c.header()` or `res.headers` would first build a Fetch Headers object.

export function json(c: Context, status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...protocolHeadersOf(c) } });
}

export function noContent(c: Context): Response {
  return new Response(null, { status: 204, headers: protocolHeadersOf(c) });
}

export function bytes(c: Context, status: number, body: Uint8Array, contentType: string): Response {
  return new Response(body as Uint8Array<ArrayBuffer>, { status, headers: { 'content-type': contentType, ...protocolHeadersOf(c) } });
}
