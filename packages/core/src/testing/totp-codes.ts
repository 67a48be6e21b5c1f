import { Secret } from 'otpauth';

/** The bytes of the base32 secret an enrollment hands out, for tests that play the authenticator. */
export function totpSecretBytes(base32: string): Uint8Array {
  return Secret.fromBase32(base32).bytes;
}
