import type { Context } from 'hono';
import { isoTimestamp, type Result } from '@strongroom/core';
import { HttpProblem, type StatusContext } from './problem.js';

/** RFC 3339 UTC with milliseconds, the wire form of every timestamp. */
export const iso = isoTimestamp;
export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoTimestamp(ms));

/** The value of a successful Result, or the refusal thrown as problem details (in a named status context). */
export function unwrap<T>(result: Result<T>, context?: StatusContext): T {
  if (result.ok) return result.value;
  throw HttpProblem.from(result, context);
}

/**
 * The header sets every response starts from, built once per app. The app's fetch wrapper puts them
 * in the environment; tests that call a route's handler without it get none.
 */
export interface ResponseHeaders {
  readonly protocol: Readonly<Record<string, string>>;
  readonly json: Readonly<Record<string, string>>;
  /**
   * The same with `Cache-Control: no-store` (its own `noStore` is itself), for the answers of
   * routes that hand out secrets: put in the environment before such a handler runs (withNoStore),
   * so the header is in the plain object the response is built with. Set on the finished response
   * instead, it made @hono/node-server build a Fetch Headers object for every refresh and sign-in.
   */
  readonly noStore: ResponseHeaders;
}

export function responseHeaders(protocol: Record<string, string>): ResponseHeaders {
  return headerSet(protocol, headerSet({ ...protocol, 'cache-control': 'no-store' }, null));
}

/** One set of response headers; `noStore` null when the set already says no-store (it is then its own). */
function headerSet(protocol: Record<string, string>, noStore: ResponseHeaders | null): ResponseHeaders {
  const set = {
    protocol: { ...protocol },
    json: { 'content-type': 'application/json', ...protocol },
    noStore: noStore as ResponseHeaders,
  };
  if (noStore === null) set.noStore = set;
  return set;
}

const NONE: ResponseHeaders = responseHeaders({});

function headersOf(c: Context): ResponseHeaders {
  return (c.env as { responseHeaders?: ResponseHeaders } | undefined)?.responseHeaders ?? NONE;
}

/**
 * Makes every response built from `c` from here on carry `Cache-Control: no-store` (see
 * ResponseHeaders.noStore). False when `c` has no environment (a handler called directly in a
 * test): the caller then sets the header on the response.
 */
export function withNoStore(c: Context): boolean {
  const env = c.env as { responseHeaders?: ResponseHeaders } | undefined;
  if (env === undefined || env === null) return false;
  env.responseHeaders = (env.responseHeaders ?? NONE).noStore;
  return true;
}

// Every response goes through one of these (or problemResponse), so every one carries the protocol
// headers. They are plain objects shared by every response: @hono/node-server writes such headers
// straight to the socket (copying before it adds anything), where `c.header()` or `res.headers`
// would first build a Fetch Headers object.

export function json(c: Context, status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: headersOf(c).json });
}

export function noContent(c: Context): Response {
  return new Response(null, { status: 204, headers: headersOf(c).protocol });
}

export function bytes(c: Context, status: number, body: Uint8Array, contentType: string): Response {
  return new Response(body as Uint8Array<ArrayBuffer>, {
    status,
    headers: { 'content-type': contentType, ...headersOf(c).protocol },
  });
}

/** A streamed body (a blob download) with its own headers beside the protocol headers. */
export function streamed(
  c: Context,
  status: number,
  body: ReadableStream<Uint8Array> | null,
  headers: Record<string, string>,
): Response {
  return new Response(body, { status, headers: { ...headers, ...headersOf(c).protocol } });
}
