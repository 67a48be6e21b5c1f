import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import * as v from 'valibot';
import { clientAddress, concatBytes, sourceKey, type Cidr } from '@strongroom/core';
import { HttpProblem } from './problem.js';
import type { BodySpec } from './route-def.js';
import { problemCodeOf } from './rules.js';
import { parseJsonObject } from './strict-json.js';

/** Reading a request: its headers and its body, within the limits, strictly. */

export const JSON_LIMIT = 64 * 1024;
export const CBOR_LIMIT = 256 * 1024;

interface NodeBindings {
  incoming?: IncomingMessage;
}

/**
 * A request header, read from Node's IncomingMessage when the app runs on @hono/node-server.
 * Touching the Fetch API `Request.headers` there builds a whole validated Headers object, which
 * cost more than the rest of an authenticated request; tests through app.request() fall back to it.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Whether the request carries the field `name` (lower case: letters, digits, `-`) on more than one
 * line. Node keeps the first line of the fields it holds to be single (Authorization among them)
 * and drops the others, so only its raw lines show them (all of them: see keepEveryHeaderLine).
 * They are scanned only when the field is there at all. Through app.request() (tests) the Fetch
 * API has already joined the lines into one value: false there.
 */
export function repeatsHeader(c: Context, name: string): boolean {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (incoming === undefined || incoming.headers[name] === undefined) return false;
  const lines = incoming.rawHeaders;
  let seen = false;
  for (let i = 0; i < lines.length; i += 2) {
    if (!isFieldName(lines[i]!, name)) continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/** `field` is `lower` in any case, compared without making a lower-case copy of each line's name. */
function isFieldName(field: string, lower: string): boolean {
  if (field.length !== lower.length) return false;
  if (field === lower) return true;
  // A field name is ASCII token characters: of those, only a letter and its upper case differ by 0x20 alone.
  for (let i = 0; i < field.length; i++) if ((field.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/**
 * The key the request's failed sign-ins count under: its client address (the socket's peer, or
 * behind a trusted proxy the nearest X-Forwarded-For entry that is not one), by /32 or /64.
 * Through app.request() (tests) there is no socket: every such request shares `unknown`.
 */
export function signInSource(c: Context, trustedProxies: readonly Cidr[]): string {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  const peer = incoming?.socket?.remoteAddress ?? null;
  const forwarded = trustedProxies.length > 0 ? requestHeader(c, 'x-forwarded-for') : undefined;
  return sourceKey(clientAddress(peer, forwarded, trustedProxies));
}

/** The request body as a stream of chunks, from Node directly when possible (see requestHeader). */
export function bodyChunks(c: Context): AsyncIterable<Uint8Array> {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (incoming) return incoming;
  const stream = c.req.raw.body;
  return {
    async *[Symbol.asyncIterator]() {
      if (stream === null) return;
      const reader = stream.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
    },
  };
}

/** A request that announces no body: no Content-Length (or 0) and no Transfer-Encoding. */
function declaresNoBody(c: Context): boolean {
  const length = requestHeader(c, 'content-length');
  return (length === undefined || length.trim() === '0') && requestHeader(c, 'transfer-encoding') === undefined;
}

function mediaType(c: Context): string | null {
  const raw = requestHeader(c, 'content-type');
  return raw ? raw.split(';')[0]!.trim().toLowerCase() : null;
}

export function issuesText(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .slice(0, 3)
    .map((i) => {
      const path = i.path?.map((p) => String(p.key)).join('.');
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}

/** Reads the raw body within `limit` bytes, checking the declared length first. */
export async function readLimited(
  c: Context,
  limit: number,
  code: 'error.request.too_large' | 'error.upload.too_large' = 'error.request.too_large',
): Promise<Uint8Array> {
  const declared = requestHeader(c, 'content-length');
  if (declared !== undefined && Number(declared) > limit)
    throw new HttpProblem(code, `The body may hold at most ${limit} bytes.`);
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (incoming !== undefined) return collectIncoming(incoming, limit, code);
  // Stream and stop at the limit, so a chunked body without a length cannot make us buffer it all.
  const source = bodyChunks(c);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const value of source) {
    total += value.byteLength;
    if (total > limit) throw new HttpProblem(code, `The body may hold at most ${limit} bytes.`);
    chunks.push(value);
  }
  return concatBytes(...chunks);
}

/**
 * `readLimited` on Node's IncomingMessage, through its events rather than its async iterator: the
 * iterator adds a generator, a promise per chunk and its own end-of-stream tracking to every body,
 * more work than reading a small JSON body itself. The outcomes are the iterator's: the bytes up
 * to `limit`, else a 413 problem; the stream's error, or an error for a request that closed before
 * its body ended.
 */
function collectIncoming(
  incoming: IncomingMessage,
  limit: number,
  code: 'error.request.too_large' | 'error.upload.too_large',
): Promise<Uint8Array> {
  if (incoming.readableEnded) return Promise.resolve(new Uint8Array(0));
  // Inline listeners, none of them named: tsx (esbuild's keepNames) gives every named closure a
  // defineProperty call, made per request here, which would give back what leaving the iterator
  // gained. A promise settles once, so the later events of a refused body change nothing.
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    incoming.on('data', (chunk: Uint8Array) => {
      if (total > limit) return; // refused already: the rest flows by and is dropped, so the 413 can go out
      total += chunk.byteLength;
      if (total > limit) reject(new HttpProblem(code, `The body may hold at most ${limit} bytes.`));
      else chunks.push(chunk);
    });
    // A copy either way: a chunk is a view into the socket's read buffer.
    incoming.on('end', () => resolve(chunks.length === 1 ? new Uint8Array(chunks[0]!) : concatBytes(...chunks)));
    incoming.on('error', reject);
    incoming.on('close', () => {
      if (!incoming.readableEnded) reject(new Error('The request closed before its body ended.'));
    });
  });
}

export async function readBody(c: Context, spec: BodySpec | undefined): Promise<unknown> {
  if (spec === undefined || spec.type === 'bytes') return undefined;
  if (spec.type === 'empty') {
    // A bodiless POST may send nothing at all, or `{}`.
    const raw = await readLimited(c, JSON_LIMIT);
    if (raw.byteLength === 0) return undefined;
    if (mediaType(c) !== 'application/json')
      throw new HttpProblem(
        'error.request.unsupported_media_type',
        'This operation takes no body, or an empty JSON object.',
      );
    const parsed = parseJsonObject(raw);
    if (Object.keys(parsed).length > 0) {
      throw new HttpProblem('error.request.invalid', 'This operation takes no body, or an empty JSON object.');
    }
    return undefined;
  }
  if (spec.type === 'cbor') {
    if (mediaType(c) !== 'application/cbor')
      throw new HttpProblem('error.request.unsupported_media_type', 'This operation takes an application/cbor body.');
    return readLimited(c, CBOR_LIMIT);
  }
  const type = mediaType(c);
  // No body at all where one is needed is malformed input (400), not a body of the wrong type (415).
  if (type === null && declaresNoBody(c))
    throw new HttpProblem('error.request.invalid', 'This operation needs an application/json body.');
  if (type !== 'application/json')
    throw new HttpProblem('error.request.unsupported_media_type', 'This operation takes an application/json body.');
  const raw = await readLimited(c, JSON_LIMIT);
  const parsed = parseJsonObject(raw);
  const result = v.safeParse(spec.schema, parsed);
  if (!result.success) throw new HttpProblem(problemCodeOf(result.issues), issuesText(result.issues));
  return result.output;
}

/** Raw bytes (an upload, a metadata blob) must come as application/octet-stream; parameters allowed. */
export function octetStream(c: Context): void {
  const type = requestHeader(c, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/octet-stream')
    throw new HttpProblem(
      'error.request.unsupported_media_type',
      'This operation takes an application/octet-stream body.',
    );
}

/**
 * Has Node keep every header line of a request, however many: by default it keeps about the first
 * thousand and drops the rest unseen, so a second Authorization placed after them escaped the rule
 * that it comes only once (repeatsHeader). Node's 16 KiB bound on a request's headers still holds.
 * Every listener serving the app calls it: the server's (main.ts) and the tests'.
 */
export function keepEveryHeaderLine(server: { maxHeadersCount: number | null }): void {
  server.maxHeadersCount = 0;
}
