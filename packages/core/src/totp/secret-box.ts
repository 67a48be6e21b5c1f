import type { Random } from '../ports/random.js';
import { SecretBox } from '../secrets/secret-box.js';

/**
 * Seals TOTP secrets (and OpenID PKCE verifiers) at rest under the server key. The account id is
 * part of the sealed context, so a sealed secret copied onto another account's row does not open.
 */
export class TotpSecretBox {
  readonly #box: SecretBox;

  constructor(options: { key: Uint8Array; random: Random }) {
    this.#box = new SecretBox(options);
  }

  seal(secret: Uint8Array, accountId: string): Promise<string> {
    return this.#box.seal(secret, `svc-totp-secret/v1:${accountId}`);
  }

  /** The secret, or null when the value is not ours (malformed, other key, other account). */
  open(sealed: string, accountId: string): Promise<Uint8Array | null> {
    return this.#box.open(sealed, `svc-totp-secret/v1:${accountId}`);
  }
}
