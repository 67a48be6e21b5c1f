import { ok, refuse, type Result } from '../errors.js';

/**
 * May a federated fill name `peer` as its source? Only a peer this server is configured to trust
 * (SVC_FEDERATION_PEERS): the per-peer budget would bound nothing if any made-up name had its own.
 * Compared as base URLs, so a trailing slash makes no other peer.
 */
export function decideSourcePeer(peer: string, configured: readonly string[]): Result<string, 'error.federation.unknown_peer'> {
  const base = peer.replace(/\/+$/, '');
  return configured.includes(base) ? ok(base) : refuse('error.federation.unknown_peer', 'source_peer is not one of the peers this server federates with.', { source_peer: peer });
}
