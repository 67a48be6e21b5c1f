import { ok, refuse, type Result } from '../errors.js';
import { formatHandle, handleHost, parseHandle, type Handle } from '../discovery/rules.js';
import type { PeerReply } from '../ports/peer-lookup.js';

/** What a peer's refusal must look like to be passed on: a stable error code, not text of any length. */
const ERROR_CODE = /^error(\.[a-z][a-z0-9_]*){1,5}$/;
const MAX_CODE_LENGTH = 100;

/**
 * May a peer's reply to a forwarded lookup be passed on? A refusal may, when it is one (a 4xx or
 * 5xx) and carries an error code of the usual shape: the code goes to our caller, so a peer cannot
 * hand it a megabyte of text or a sentence in place of one; it names no handle. A 200
 * only when it is for the handle asked and that handle is the peer's own: a listed peer is trusted
 * for its own users' keys, and for nobody else's, so it must not present keys it controls under a
 * handle of another server (this one included) or of another of its users. Handles are compared as
 * {@link parseHandle} normalises them (the host in lower case, a default port dropped).
 */
export function decidePeerAnswer(peer: string, asked: Handle, reply: PeerReply): Result<PeerReply, 'error.federation.peer_unavailable'> {
  if (reply.status !== 200) {
    const code = typeof reply.body === 'object' && reply.body !== null && !Array.isArray(reply.body) ? (reply.body as Record<string, unknown>)['code'] : undefined;
    const refusal = reply.status >= 400 && reply.status <= 599 && typeof code === 'string' && code.length <= MAX_CODE_LENGTH && ERROR_CODE.test(code);
    return refusal ? ok(reply) : refuse('error.federation.peer_unavailable', `${peer} answered ${reply.status} without an error code.`);
  }
  const host = handleHost(peer);
  const named = typeof reply.body === 'object' && reply.body !== null && !Array.isArray(reply.body) ? (reply.body as Record<string, unknown>)['handle'] : undefined;
  const answered = typeof named === 'string' ? parseHandle(named) : null;
  if (asked.host === host && answered !== null && answered.host === host && answered.user === asked.user) return ok(reply);
  return refuse('error.federation.peer_unavailable', `${peer} answered a lookup of ${formatHandle(asked.user, asked.host)} with another handle.`);
}
