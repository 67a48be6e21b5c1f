import { fromBase64url } from '../encoding/bytes.js';
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
 * {@link parseHandle} normalises them (the host in lower case, a default port dropped). A 200 is also
 * the lookup answer this server itself gives ({@link isLookupAnswer}): its caller is told the same shape
 * whether the handle is local or a peer's, so a peer's garbage is a bad answer, never passed on.
 */
export function decidePeerAnswer(
  peer: string,
  asked: Handle,
  reply: PeerReply,
): Result<PeerReply, 'error.federation.peer_unavailable'> {
  if (reply.status !== 200) {
    const code =
      typeof reply.body === 'object' && reply.body !== null && !Array.isArray(reply.body)
        ? (reply.body as Record<string, unknown>)['code']
        : undefined;
    const refusal =
      reply.status >= 400 &&
      reply.status <= 599 &&
      typeof code === 'string' &&
      code.length <= MAX_CODE_LENGTH &&
      ERROR_CODE.test(code);
    return refusal
      ? ok(reply)
      : refuse('error.federation.peer_unavailable', `${peer} answered ${reply.status} without an error code.`);
  }
  const host = handleHost(peer);
  const named =
    typeof reply.body === 'object' && reply.body !== null && !Array.isArray(reply.body)
      ? (reply.body as Record<string, unknown>)['handle']
      : undefined;
  const answered = typeof named === 'string' ? parseHandle(named) : null;
  if (!(asked.host === host && answered !== null && answered.host === host && answered.user === asked.user)) {
    return refuse(
      'error.federation.peer_unavailable',
      `${peer} answered a lookup of ${formatHandle(asked.user, asked.host)} with another handle.`,
    );
  }
  if (!isLookupAnswer(reply.body))
    return refuse('error.federation.peer_unavailable', `${peer} sent a malformed answer to a lookup.`);
  return ok(reply);
}

/** An Ed25519 public key: the identity anchor a lookup answers with. */
const IDENTITY_KEY_BYTES = 32;

const base64urlText = (x: unknown): x is string =>
  typeof x === 'string' && /^[A-Za-z0-9_-]+$/.test(x) && fromBase64url(x) !== null;

/**
 * The lookup answer of the wire (spec §15.3): `account_id` a string,
 * `display_name` a string or null, `identity_key` (base64url of an Ed25519 public key) and `directory`
 * (base64url) both null while nothing is published, both present otherwise.
 */
export function isLookupAnswer(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  if (typeof b['account_id'] !== 'string' || b['account_id'] === '') return false;
  if (b['display_name'] !== null && typeof b['display_name'] !== 'string') return false;
  if (b['identity_key'] === null && b['directory'] === null) return true;
  return (
    base64urlText(b['identity_key']) &&
    fromBase64url(b['identity_key'])!.length === IDENTITY_KEY_BYTES &&
    base64urlText(b['directory'])
  );
}
