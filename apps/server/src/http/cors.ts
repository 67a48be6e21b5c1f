/**
 * CORS for browser clients on the origins named in SVC_CORS_ORIGINS (none by default: then this is
 * never built and costs nothing). Tokens travel in the Authorization header, never in cookies, so
 * credentials mode is not offered.
 */

/**
 * What a browser may send: the bearer token, the body's type, every `X-Svc-*` header (the
 * protocol date, crypto suite, sidecar schema, acting-as) and the headers of a tus client's
 * resumable upload. Named when the preflight names none.
 */
const ALLOW_HEADERS =
  'Authorization, Content-Type, X-Svc-Protocol, X-Svc-Crypto-Suite, X-Svc-Sidecar-Schema, X-Svc-Act-As, Tus-Resumable, Upload-Length, Upload-Metadata, Upload-Offset, Upload-Checksum';
/** The request headers a tus client sends (resumable uploads, routes/tus.ts). */
const TUS_REQUEST_HEADERS = new Set([
  'tus-resumable',
  'upload-length',
  'upload-metadata',
  'upload-offset',
  'upload-checksum',
]);
/**
 * What a browser script may read from an answer: the protocol window, deprecation notices,
 * Retry-After, and what downloads and sign-in need: a ranged answer's Content-Range (and its
 * length, Accept-Ranges, the blob's ETag), a redirect's Location, a 401's WWW-Authenticate, and
 * what a tus client reads (the offset, the length, the expiry, the server's tus version).
 */
const EXPOSE_HEADERS =
  'X-Svc-Protocol-Min, X-Svc-Protocol-Max, X-Svc-Min-Client-Build, Deprecation, Sunset, Retry-After, Content-Range, Content-Length, Accept-Ranges, ETag, Location, WWW-Authenticate, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Upload-Offset, Upload-Length, Upload-Expires';
const ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** How long a browser may reuse a preflight answer (seconds). */
const MAX_AGE = '600';

export class Cors {
  readonly #origins: ReadonlySet<string>;
  readonly #protocolHeaders: () => Readonly<Record<string, string>>;

  /** `protocolHeaders` gives the headers of the moment (the Min follows announced deprecations). */
  constructor(origins: readonly string[], protocolHeaders: () => Readonly<Record<string, string>>) {
    this.#origins = new Set(origins);
    this.#protocolHeaders = protocolHeaders;
  }

  allows(origin: string): boolean {
    return this.#origins.has(origin);
  }

  /**
   * The answer to a preflight from an allowed origin: 204, nothing else done. Of the headers the
   * browser asks about, those we accept are echoed (any `X-Svc-*` one included); others are left
   * out, so the browser refuses to send them.
   */
  preflight(origin: string, requested: string | null): Response {
    return new Response(null, {
      status: 204,
      headers: {
        ...this.#protocolHeaders(),
        'access-control-allow-origin': origin,
        'access-control-allow-methods': ALLOW_METHODS,
        'access-control-allow-headers': allowedHeaders(requested),
        'access-control-max-age': MAX_AGE,
        vary: 'Origin',
      },
    });
  }

  /** Marks an actual answer as readable by `origin` (allowed) or, for caches, as varying by origin. */
  decorate(res: Response, origin: string | null): Response {
    const headers = res.headers;
    headers.append('vary', 'Origin');
    // A record open to any origin (WebFinger's `*`, spec §15.9) stays so: it carries no credentials.
    if (origin !== null && headers.get('access-control-allow-origin') !== '*') {
      headers.set('access-control-allow-origin', origin);
      headers.set('access-control-expose-headers', EXPOSE_HEADERS);
    }
    return res;
  }
}

function allowedHeaders(requested: string | null): string {
  if (requested === null || requested.trim() === '') return ALLOW_HEADERS;
  return requested
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(
      (h) =>
        h === 'authorization' || h === 'content-type' || TUS_REQUEST_HEADERS.has(h) || /^x-svc-[a-z0-9-]+$/.test(h),
    )
    .join(', ');
}
