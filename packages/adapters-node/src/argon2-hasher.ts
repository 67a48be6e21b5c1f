import { hash, verify } from '@node-rs/argon2';
import type { PasswordHasher } from '@strongroom/core';

export interface Argon2Options {
  /** KiB. OWASP's floor for argon2id is 19 MiB. */
  readonly memoryCost: number;
  readonly timeCost: number;
  readonly parallelism: number;
}

export const OWASP_ARGON2ID: Argon2Options = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

// `Algorithm` is a const enum in the typings, which isolated modules cannot inline: 2 is Argon2id.
const ARGON2ID = 2 as const;

/** argon2id password hashing; the PHC string carries salt and parameters, so old hashes keep verifying. */
export class Argon2Hasher implements PasswordHasher {
  readonly #options: Argon2Options;
  constructor(options: Argon2Options = OWASP_ARGON2ID) {
    if (options.memoryCost < OWASP_ARGON2ID.memoryCost || options.timeCost < OWASP_ARGON2ID.timeCost) {
      throw new RangeError('argon2id parameters below the OWASP minimum (19 MiB, t=2)');
    }
    this.#options = options;
  }
  hash(password: string): Promise<string> {
    return hash(password, { algorithm: ARGON2ID as never, ...this.#options });
  }
  async verify(stored: string, password: string): Promise<boolean> {
    try {
      return await verify(stored, password);
    } catch {
      return false;
    }
  }
}
