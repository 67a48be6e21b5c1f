import { ed25519 } from '@noble/curves/ed25519.js';
import { fromBase64url, fromHex, sha256, toBase64url, toHex } from '../encoding/bytes.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { ok, refuse, type Result } from '../errors.js';
import type { AttestationHistoryEntry } from '../ports/attestation-key-store.js';

export const HISTORY_DOMAIN = 'svc-attestation-history/v1';

/** The fields an entry's hash covers. `retired_at` is deliberately not among them: it changes later. */
export interface HistoryLink {
  readonly seq: number;
  readonly kid: string;
  /** base64url of the 32-byte Ed25519 public key. */
  readonly publicKey: string;
  /** Unix seconds. */
  readonly addedAt: number;
  readonly prev: string;
}

/** The canonical CBOR the hash covers: `[domain, seq, kid, public key bytes, added_at, prev]`. */
export function historyPreimage(link: HistoryLink): Uint8Array {
  const key = fromBase64url(link.publicKey);
  if (key === null || key.length !== 32) throw new RangeError('an attestation public key is 32 bytes of base64url');
  return canonicalCbor([HISTORY_DOMAIN, link.seq, link.kid, key, link.addedAt, link.prev]);
}

/** Hex SHA-256 of the entry's canonical CBOR. */
export function historyHash(link: HistoryLink): string {
  return toHex(sha256(historyPreimage(link)));
}

/**
 * The next entry of a history, signed by `signerSeed`: the previous key's seed, or for the first
 * entry the new key's own (it vouches for itself; every later key is vouched for by its predecessor).
 */
export function makeHistoryEntry(
  last: AttestationHistoryEntry | null,
  key: { kid: string; publicKey: string; addedAt: number },
  signerSeed: Uint8Array,
): AttestationHistoryEntry {
  const link: HistoryLink = {
    seq: last === null ? 1 : last.seq + 1,
    kid: key.kid,
    publicKey: key.publicKey,
    addedAt: key.addedAt,
    prev: last === null ? '' : last.hash,
  };
  const hash = historyHash(link);
  return { ...link, hash, sig: toBase64url(ed25519.sign(fromHex(hash)!, signerSeed)) };
}

/** Why an entry does not extend the chain after `last`, or null when it does. */
function linkFault(last: AttestationHistoryEntry | null, entry: AttestationHistoryEntry): string | null {
  const seq = last === null ? 1 : last.seq + 1;
  if (entry.seq !== seq) return `seq is ${entry.seq}, expected ${seq}`;
  if (entry.prev !== (last === null ? '' : last.hash)) return "prev is not the previous entry's hash";
  if (!Number.isSafeInteger(entry.addedAt) || entry.addedAt < 0) return 'added_at is not a whole number of seconds';
  let hash: string;
  try {
    hash = historyHash(entry);
  } catch {
    return 'the public key is not 32 bytes of base64url';
  }
  if (hash !== entry.hash) return 'hash does not match the entry';
  const signer = fromBase64url(last === null ? entry.publicKey : last.publicKey);
  const sig = fromBase64url(entry.sig);
  if (signer === null || sig === null || sig.length !== 64) return 'sig is not an Ed25519 signature';
  let verified = false;
  try {
    verified = ed25519.verify(sig, fromHex(hash)!, signer, { zip215: false });
  } catch {
    verified = false;
  }
  return verified
    ? null
    : last === null
      ? "sig is not the entry key's own signature"
      : "sig is not the previous key's signature";
}

/** True when `entry` is the valid next link after `last`. Stores decide appends with this. */
export function acceptsHistoryEntry(last: AttestationHistoryEntry | null, entry: AttestationHistoryEntry): boolean {
  return linkFault(last, entry) === null;
}

/**
 * Checks a whole history (by seq ascending): each entry hashes to its `hash`, names its
 * predecessor's hash, and is signed by its predecessor's key. Anyone can run this against the
 * published record; the server runs it at every start and refuses to start on a broken chain.
 */
export function verifyHistory(
  entries: readonly AttestationHistoryEntry[],
): Result<void, 'error.attestation.history_invalid'> {
  let last: AttestationHistoryEntry | null = null;
  for (const entry of entries) {
    const fault = linkFault(last, entry);
    if (fault !== null)
      return refuse(
        'error.attestation.history_invalid',
        `attestation history entry ${entry.seq} (kid ${entry.kid}): ${fault}`,
        { seq: entry.seq },
      );
    last = entry;
  }
  return ok(undefined);
}
