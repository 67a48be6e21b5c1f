import { createCipheriv, createDecipheriv } from 'node:crypto';
import { CoreError, fromBase64url, type Random, type SecretSealer } from '@strongroom/core';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Core's SecretBox (AES-256-GCM under the server key, the context as additional data, wire form
 * `v1.<iv>.<ciphertext+tag>`, all base64url) with node:crypto's synchronous cipher: what one box
 * seals the other opens. WebCrypto queues each call on libuv's thread pool and wakes the event loop
 * when it is done; for the few dozen bytes of a sync cursor, sealed and opened on every page, that
 * hand-off cost far more than the cipher (as it did for Ed25519 signatures, see ed25519-signer.ts).
 */
export class NodeSecretBox implements SecretSealer {
  readonly #key: Buffer;
  readonly #random: Random;

  constructor(options: { key: Uint8Array; random: Random }) {
    if (options.key.length !== 32) throw new CoreError('error.internal', 'the server secret key must be 32 bytes');
    this.#key = Buffer.from(options.key);
    this.#random = options.random;
  }

  async seal(secret: Uint8Array, context: string): Promise<string> {
    const iv = this.#random.bytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(secret), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${Buffer.from(iv.buffer, iv.byteOffset, iv.length).toString('base64url')}.${body.toString('base64url')}`;
  }

  /** The secret, or null when the value is not ours (malformed, other key, other context). */
  async open(sealed: string, context: string): Promise<Uint8Array | null> {
    const [version, ivText, bodyText, ...rest] = sealed.split('.');
    if (version !== VERSION || ivText === undefined || bodyText === undefined || rest.length > 0) return null;
    const iv = fromBase64url(ivText);
    const body = fromBase64url(bodyText);
    if (iv === null || iv.length !== IV_BYTES || body === null || body.length < TAG_BYTES) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
      return new Uint8Array(plain.buffer, plain.byteOffset, plain.length);
    } catch {
      return null;
    }
  }
}
