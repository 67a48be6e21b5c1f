import { ok, refuse, type Result } from '../errors.js';
import { formatHandle, handleHost, parseHandle, type Handle } from '../discovery/rules.js';
import type { PeerReply } from '../ports/peer-lookup.js';

/**
 * May a peer's reply to a forwarded lookup be passed on? A refusal may: it names no handle. A 200
 * only when it is for the handle asked and that handle is the peer's own: a listed peer is trusted
 * for its own users' keys, and for nobody else's, so it must not present keys it controls under a
 * handle of another server (this one included) or of another of its users. Handles are compared as
 * {@link parseHandle} normalises them (the host in lower case, a default port dropped).
 */
export function decidePeerAnswer(peer: string, asked: Handle, reply: PeerReply): Result<PeerReply, 'error.federation.peer_unavailable'> {
  if (reply.status !== 200) return ok(reply);
  const host = handleHost(peer);
  const named = typeof reply.body === 'object' && reply.body !== null && !Array.isArray(reply.body) ? (reply.body as Record<string, unknown>)['handle'] : undefined;
  const answered = typeof named === 'string' ? parseHandle(named) : null;
  if (asked.host === host && answered !== null && answered.host === host && answered.user === asked.user) return ok(reply);
  return refuse('error.federation.peer_unavailable', `${peer} answered a lookup of ${formatHandle(asked.user, asked.host)} with another handle.`);
}
