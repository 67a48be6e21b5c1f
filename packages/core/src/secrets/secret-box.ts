import { fromBase64url, toBase64url, utf8 } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import type { Random } from '../ports/random.js';

const VERSION = 'v1';

/** Seals a secret at rest under the server key, bound to a context string (SecretBox and TotpSecretBox fit). */
export interface SecretSealer {
  seal(secret: Uint8Array, context: string): Promise<string>;
  open(sealed: string, context: string): Promise<Uint8Array | null>;
}
const IV_BYTES = 12;

/**
 * Seals secrets at rest under the 32-byte server key (`SVC_SECRET_KEY`): AES-256-GCM through
 * WebCrypto, with a fresh 96-bit IV from the Random port per seal. Every seal names its context
 * (what the secret is and whose), which is the additional data: a sealed value copied onto another
 * row, account or kind of secret does not open. Wire form: `v1.<iv base64url>.<ciphertext+tag base64url>`.
 */
export class SecretBox implements SecretSealer {
  readonly #key: Promise<CryptoKey>;
  readonly #random: Random;

  constructor(options: { key: Uint8Array; random: Random }) {
    if (options.key.length !== 32) throw new CoreError('error.internal', 'the server secret key must be 32 bytes');
    this.#key = globalThis.crypto.subtle.importKey('raw', new Uint8Array(options.key), { name: 'AES-GCM' }, false, [
      'encrypt',
      'decrypt',
    ]);
    this.#random = options.random;
  }

  async seal(secret: Uint8Array, context: string): Promise<string> {
    const iv = new Uint8Array(this.#random.bytes(IV_BYTES));
    const sealed = await globalThis.crypto.subtle.encrypt(
      { name: 'AES-GCM', iv, additionalData: utf8Buffer(context) },
      await this.#key,
      new Uint8Array(secret),
    );
    return `${VERSION}.${toBase64url(iv)}.${toBase64url(new Uint8Array(sealed))}`;
  }

  /** The secret, or null when the value is not ours (malformed, other key, other context). */
  async open(sealed: string, context: string): Promise<Uint8Array | null> {
    const [version, ivText, bodyText, ...rest] = sealed.split('.');
    if (version !== VERSION || ivText === undefined || bodyText === undefined || rest.length > 0) return null;
    const iv = fromBase64url(ivText);
    const body = fromBase64url(bodyText);
    if (iv === null || iv.length !== IV_BYTES || body === null) return null;
    try {
      const plain = await globalThis.crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: new Uint8Array(iv), additionalData: utf8Buffer(context) },
        await this.#key,
        new Uint8Array(body),
      );
      return new Uint8Array(plain);
    } catch {
      return null;
    }
  }
}

/**
 * True when a stored value is in the sealed form. A raw key as earlier builds stored it (32 bytes
 * of base64url) never is: '.' is not in the base64url alphabet. Used to seal such values in place.
 */
export function isSealed(stored: string): boolean {
  return stored.startsWith(`${VERSION}.`) && stored.split('.').length === 3;
}

function utf8Buffer(text: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(utf8(text));
}
