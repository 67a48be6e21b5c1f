import { createHash } from 'node:crypto';
import type { Context } from 'hono';

/**
 * Public records (the /.well-known documents, WebFinger, the OpenAPI document) are fetched by
 * clients and peers that poll them. Each answer says how long it may be reused (`max-age` equal to
 * what docs/api.md tells peers to cache) and carries a strong ETag of its bytes, so a poller that
 * sends the tag back gets 304 and no body.
 */
export const RECORD_MAX_AGE_S = {
  /** Peers cache a server's signing keys 10 minutes (an unknown kid refetches sooner). */
  serverInfo: 600,
  /** Peers re-read revocations at most 60 s apart. */
  revokedJti: 60,
  deprecation: 300,
  attestationKeys: 300,
  webfinger: 300,
  openApi: 300,
} as const;

/** The strong entity tag of a record's bytes. */
export function entityTag(body: Uint8Array): string {
  return `"${createHash('sha256').update(body).digest('base64url')}"`;
}

/**
 * Whether an If-None-Match header matches the tag. The comparison is the weak one RFC 9110 §13.1.2
 * prescribes for If-None-Match (a W/ prefix is ignored), and `*` matches any current record.
 */
export function noneMatch(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  const wanted = header.trim();
  if (wanted === '*') return true;
  return wanted.split(',').some((t) => t.trim().replace(/^W\//, '') === tag);
}

function protocolHeadersOf(c: Context): Readonly<Record<string, string>> {
  return (
    (c.env as { responseHeaders?: { protocol: Readonly<Record<string, string>> } } | undefined)?.responseHeaders
      ?.protocol ?? {}
  );
}

/** A 200 with the record, or a 304 when the caller already holds these exact bytes. */
export function publicRecord(
  c: Context,
  body: unknown,
  maxAgeS: number,
  options: { contentType?: string; headers?: Readonly<Record<string, string>> } = {},
): Response {
  const bytes = new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body));
  const tag = entityTag(bytes);
  const headers = {
    ...protocolHeadersOf(c),
    'cache-control': `public, max-age=${maxAgeS}`,
    etag: tag,
    ...options.headers,
  };
  if (noneMatch(c.req.header('if-none-match'), tag)) return new Response(null, { status: 304, headers });
  return new Response(bytes, {
    status: 200,
    headers: { 'content-type': options.contentType ?? 'application/json', ...headers },
  });
}
