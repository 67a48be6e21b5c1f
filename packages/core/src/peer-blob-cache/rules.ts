import { ok, refuse, type Result } from '../errors.js';

/**
 * May a federated fill name `peer` as its source? Only a peer this server is configured to trust
 * (SVC_FEDERATION_PEERS): the per-peer budget would bound nothing if any made-up name had its own.
 * The answer is the configured peer itself, so every spelling of one peer draws on one budget.
 *
 * Compared as origins, as the WHATWG URL parser writes them: scheme and host in lower case, a
 * default port dropped, so `HTTPS://Peer.Example:443/` is `https://peer.example`. Those spellings
 * name the same server; anything more than an origin (a path, query, fragment or credentials) is
 * not a base URL, and so is no peer.
 */
export function decideSourcePeer(
  peer: string,
  configured: readonly string[],
): Result<string, 'error.federation.unknown_peer'> {
  const origin = originOf(peer);
  const match = origin === null ? undefined : configured.find((c) => originOf(c) === origin);
  return match !== undefined
    ? ok(match)
    : refuse('error.federation.unknown_peer', 'source_peer is not one of the peers this server federates with.', {
        source_peer: peer,
      });
}

/** The http(s) origin a base URL names (trailing slashes aside), or null when it names more or is none. */
function originOf(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\/+$/, ''));
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  return parsed.href === `${parsed.origin}/` ? parsed.origin : null;
}
