import { ed25519 } from '@noble/curves/ed25519.js';
import { fromBase64url, toBase64url } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import { isSealed, type SecretSealer } from './secret-box.js';

/** Which ring a private key belongs to: access-token signing or storage attestation. */
export type SealedKeyKind = 'signing' | 'attestation';

/** The sealed context of one key: its kind and kid, so a sealed seed opens only on its own row. */
export const keySealContext = (kind: SealedKeyKind, kid: string): string => `svc-${kind}-key/v1:${kid}`;

/** A new key's Ed25519 seed, sealed for storage. */
export function sealKeySeed(box: SecretSealer, kind: SealedKeyKind, kid: string, seed: Uint8Array): Promise<string> {
  return box.seal(seed, keySealContext(kind, kid));
}

/**
 * The Ed25519 seed of a stored key, opened under the server key and checked against the stored
 * public key. Throws when it does not open (another SVC_SECRET_KEY, or a row that was tampered
 * with or copied from elsewhere), when it is still stored raw, or when it is not the key its
 * public half names: a ring never signs with a key it cannot stand behind.
 */
export async function openKeySeed(
  box: SecretSealer,
  kind: SealedKeyKind,
  record: { kid: string; privateKey: string; publicKey: string },
): Promise<Uint8Array> {
  if (!isSealed(record.privateKey)) {
    throw new CoreError(
      'error.internal',
      `${kind} key ${record.kid} is stored unsealed; restart a server of this build, which seals it in place`,
    );
  }
  const seed = await box.open(record.privateKey, keySealContext(kind, record.kid));
  if (seed === null || seed.length !== 32) {
    throw new CoreError(
      'error.internal',
      `${kind} key ${record.kid} does not open under this server key (SVC_SECRET_KEY): it was sealed under another key, or its row was altered`,
    );
  }
  if (toBase64url(ed25519.getPublicKey(seed)) !== record.publicKey) {
    throw new CoreError('error.internal', `${kind} key ${record.kid} is not the key its public half names`);
  }
  return seed;
}

/**
 * Seals in place every key an earlier build stored raw. `reseal` replaces the stored value only
 * while it is still the raw one, so two processes starting at once seal each key once (the loser's
 * write changes nothing) and a second run finds nothing to do. Returns how many this call sealed.
 */
export async function sealRawKeys(
  box: SecretSealer,
  kind: SealedKeyKind,
  records: readonly { kid: string; privateKey: string; publicKey: string }[],
  reseal: (kid: string, from: string, to: string) => Promise<boolean>,
): Promise<number> {
  let sealed = 0;
  for (const r of records) {
    if (isSealed(r.privateKey)) continue;
    const seed = fromBase64url(r.privateKey);
    if (seed === null || seed.length !== 32 || toBase64url(ed25519.getPublicKey(seed)) !== r.publicKey) {
      throw new CoreError(
        'error.internal',
        `${kind} key ${r.kid} is neither sealed nor a raw key matching its public half`,
      );
    }
    if (await reseal(r.kid, r.privateKey, await sealKeySeed(box, kind, r.kid, seed))) sealed++;
  }
  return sealed;
}
