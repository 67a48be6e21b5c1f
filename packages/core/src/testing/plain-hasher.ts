import { sha256Hex } from '../encoding/bytes.js';
import type { PasswordHasher } from '../ports/password-hasher.js';

/** A fast, unsalted stand-in for argon2 in pure-core tests only. */
export class PlainHasher implements PasswordHasher {
  async hash(password: string): Promise<string> {
    return `plain$${sha256Hex(password)}`;
  }
  async verify(hash: string, password: string): Promise<boolean> {
    return hash === `plain$${sha256Hex(password)}`;
  }
}
