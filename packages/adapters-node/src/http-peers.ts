import {
  PeerUnavailableError,
  type Clock,
  type PeerDirectory,
  type PeerLookup,
  type PeerReply,
} from '@strongroom/core';
import type { JWK } from 'jose';

export interface HttpPeersOptions {
  readonly clock: Clock;
  /** Injected for tests; the global fetch otherwise. */
  readonly fetch?: typeof fetch;
  /** Every exchange with a peer, its whole answer included, gives up after this long (default 5 s). */
  readonly timeoutMs?: number;
  /** How long a peer's revoked-jti record is trusted; never more than 60 s (the default). */
  readonly revokedTtlMs?: number;
  /** How long a peer's signing keys are trusted before a routine refetch (default 10 minutes). */
  readonly keysTtlMs?: number;
  /** At most one refetch for an unknown `kid` per peer in this interval (default 30 s). */
  readonly unknownKidIntervalMs?: number;
  /** After a failed fetch of a record, callers are refused at once for this long (default 5 s). */
  readonly failureBackoffMs?: number;
}

/** The most a peer answer may weigh: a JWKS, a day of revocations or a lookup is far below this. */
const MAX_BODY_BYTES = 1024 * 1024;
const REVOKED_TTL_CAP_MS = 60_000;

interface KeyCache {
  keys: Map<string, JWK>;
  fetchedAt: number;
  /** When an unknown kid last caused a refetch (the rate limit). */
  unknownKidAt: number;
}
interface RevokedCache {
  jtis: ReadonlySet<string>;
  fetchedAt: number;
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Peers' public records over HTTP, on fetch: each peer's signing keys (from its server info) and
 * revoked-jti record, cached; plus forwarded lookups. Every request has a bounded time; any failure
 * to get a well-formed answer is a PeerUnavailableError. Concurrent loads of one record share one
 * request, so a burst of tokens costs the peer one fetch.
 */
export class HttpPeers implements PeerDirectory, PeerLookup {
  readonly #o: Required<Omit<HttpPeersOptions, 'fetch'>> & { fetch: typeof fetch };
  readonly #keys = new Map<string, KeyCache>();
  readonly #revoked = new Map<string, RevokedCache>();
  readonly #inflight = new Map<string, Promise<unknown>>();
  /** When a record last failed to load, so a burst of tokens naming a dead peer costs one attempt. */
  readonly #failedAt = new Map<string, number>();

  constructor(options: HttpPeersOptions) {
    this.#o = {
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
      timeoutMs: 5_000,
      keysTtlMs: 600_000,
      unknownKidIntervalMs: 30_000,
      failureBackoffMs: 5_000,
      ...options,
      revokedTtlMs: Math.min(options.revokedTtlMs ?? REVOKED_TTL_CAP_MS, REVOKED_TTL_CAP_MS),
    };
  }

  async verificationKey(peer: string, kid: string): Promise<JWK | null> {
    const now = this.#o.clock.now();
    let cache = this.#keys.get(peer);
    if (cache === undefined) {
      cache = await this.#loadKeys(peer, now);
    } else if (now - cache.fetchedAt >= this.#o.keysTtlMs) {
      // A routine refresh; a peer that is down meanwhile keeps its last known keys.
      cache = await this.#loadKeys(peer, now).catch(() => cache!);
    }
    const known = cache.keys.get(kid);
    if (known !== undefined) return known;
    // Unknown kid: maybe a rotation. One refetch, and no other for this peer for a while.
    if (now - cache.unknownKidAt < this.#o.unknownKidIntervalMs) return null;
    cache.unknownKidAt = now;
    const fresh = await this.#loadKeys(peer, now);
    fresh.unknownKidAt = now;
    return fresh.keys.get(kid) ?? null;
  }

  async revokedJtis(peer: string): Promise<ReadonlySet<string>> {
    const now = this.#o.clock.now();
    const cache = this.#revoked.get(peer);
    if (cache !== undefined && now - cache.fetchedAt < this.#o.revokedTtlMs) return cache.jtis;
    return this.#once(`revoked ${peer}`, async () => {
      const body = await this.#getJson(`${peer}/.well-known/svc/revoked-jti`);
      if (!isRecord(body) || body['issuer'] !== peer || !Array.isArray(body['revoked']))
        throw new PeerUnavailableError(`${peer} sent a malformed revoked-jti record`);
      const jtis = new Set<string>();
      for (const r of body['revoked']) if (isRecord(r) && typeof r['jti'] === 'string') jtis.add(r['jti']);
      this.#revoked.set(peer, { jtis, fetchedAt: now });
      return jtis;
    });
  }

  async lookup(request: {
    peer: string;
    handle: string;
    capability: string;
    protocolVersion: string;
  }): Promise<PeerReply> {
    const url = `${request.peer}/v1/discovery/lookup?handle=${encodeURIComponent(request.handle)}`;
    const headers = { authorization: `SvcCapability ${request.capability}`, 'x-svc-protocol': request.protocolVersion };
    return this.#exchange(url, headers, () => true);
  }

  #loadKeys(peer: string, now: number): Promise<KeyCache> {
    return this.#once(`keys ${peer}`, async () => {
      const info = await this.#getJson(`${peer}/.well-known/svc/server-info`);
      if (!isRecord(info) || info['api_base_url'] !== peer)
        throw new PeerUnavailableError(`${peer} sent server info for another base URL`);
      const jwks = info['signing_keys'];
      if (!isRecord(jwks) || !Array.isArray(jwks['keys']))
        throw new PeerUnavailableError(`${peer} sent server info without signing keys`);
      const keys = new Map<string, JWK>();
      for (const k of jwks['keys']) {
        if (
          isRecord(k) &&
          k['kty'] === 'OKP' &&
          k['crv'] === 'Ed25519' &&
          typeof k['x'] === 'string' &&
          typeof k['kid'] === 'string'
        ) {
          keys.set(k['kid'], { kty: 'OKP', crv: 'Ed25519', x: k['x'], kid: k['kid'] });
        }
      }
      const previous = this.#keys.get(peer);
      const cache: KeyCache = { keys, fetchedAt: now, unknownKidAt: previous?.unknownKidAt ?? -Infinity };
      this.#keys.set(peer, cache);
      return cache;
    });
  }

  /** One request per key at a time: callers arriving meanwhile wait for the same answer. */
  #once<T>(key: string, load: () => Promise<T>): Promise<T> {
    const pending = this.#inflight.get(key) as Promise<T> | undefined;
    if (pending) return pending;
    const failedAt = this.#failedAt.get(key);
    if (failedAt !== undefined && this.#o.clock.now() - failedAt < this.#o.failureBackoffMs) {
      return Promise.reject(new PeerUnavailableError(`${key}: the last attempt failed; not retrying yet`));
    }
    const started = load()
      .then(
        (value) => {
          this.#failedAt.delete(key);
          return value;
        },
        (err: unknown) => {
          this.#failedAt.set(key, this.#o.clock.now());
          throw err;
        },
      )
      .finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, started);
    return started;
  }

  async #getJson(url: string): Promise<unknown> {
    return (await this.#exchange(url, {}, (status) => status === 200)).body;
  }

  /**
   * One request to a peer, its answer read whole: headers and body within one timeout, and the body
   * refused once it is past the cap (declared or read), so a peer can spend neither our memory nor
   * our time. `wanted` says which statuses have a body worth reading.
   */
  async #exchange(
    url: string,
    headers: Record<string, string>,
    wanted: (status: number) => boolean,
  ): Promise<PeerReply> {
    const signal = AbortSignal.timeout(this.#o.timeoutMs);
    let res: Response;
    try {
      res = await this.#o.fetch(url, {
        headers: { accept: 'application/json', ...headers },
        redirect: 'error',
        signal,
      });
    } catch (cause) {
      throw new PeerUnavailableError(`${url} cannot be reached: ${(cause as Error)?.message ?? cause}`, { cause });
    }
    if (!wanted(res.status)) {
      await res.body?.cancel().catch(() => undefined);
      throw new PeerUnavailableError(`${url} answered ${res.status}`);
    }
    let text: string;
    try {
      text = await readCapped(res, signal, MAX_BODY_BYTES);
    } catch (cause) {
      throw new PeerUnavailableError(`${url} sent an unreadable body: ${(cause as Error)?.message ?? cause}`, {
        cause,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(text) as unknown;
    } catch (cause) {
      throw new PeerUnavailableError(`${url} sent a body that is not JSON`, { cause });
    }
    return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
  }
}

/**
 * The body as text, refused when it declares or reaches more than `cap` bytes, or when `signal`
 * fires first. The read races the signal itself: a fetch need not tie its body stream to the signal
 * it was given, and a trickling peer must not outlast the timeout.
 */
async function readCapped(res: Response, signal: AbortSignal, cap: number): Promise<string> {
  const declared = res.headers.get('content-length');
  if (declared !== null && Number(declared) > cap) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`it declares ${declared} bytes, more than ${cap}`);
  }
  if (res.body === null) return '';
  const reader = res.body.getReader();
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('timed out'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      size += value.byteLength;
      if (size > cap) throw new Error(`it is longer than ${cap} bytes`);
      chunks.push(value);
    }
  } catch (err) {
    // Cancelling drops the connection: nothing more of this answer is read.
    void reader.cancel().catch(() => undefined);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}
