/** A peer's answer to a forwarded lookup, passed back as it came. */
export interface PeerReply {
  readonly status: number;
  /** The parsed JSON body (an answer or a problem). */
  readonly body: unknown;
  /** The peer's Retry-After, when it sent one. */
  readonly retryAfter: string | null;
}

/**
 * Forwards an authenticated lookup to a peer, carrying a capability token, within a bounded time.
 * Rejects with PeerUnavailableError when the peer cannot be reached or does not answer in time.
 */
export interface PeerLookup {
  lookup(request: { peer: string; handle: string; capability: string; protocolVersion: string }): Promise<PeerReply>;
}
