import { hash, verify } from '@node-rs/argon2';
import { availableParallelism } from 'node:os';
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

/**
 * argon2id password hashing; the PHC string carries salt and parameters, so old hashes keep verifying.
 *
 * Hashes run on libuv's pool, never on the event loop, and at most `concurrency` at a time (by
 * default one per core this process may use): more would not hash faster, only crowd the event
 * loop off its core, so a storm of sign-ins slowed every other request. The rest wait their turn.
 */
export class Argon2Hasher implements PasswordHasher {
  readonly #options: Argon2Options;
  readonly #slots: Slots;
  constructor(options: Argon2Options = OWASP_ARGON2ID, concurrency = availableParallelism()) {
    if (options.memoryCost < OWASP_ARGON2ID.memoryCost || options.timeCost < OWASP_ARGON2ID.timeCost) {
      throw new RangeError('argon2id parameters below the OWASP minimum (19 MiB, t=2)');
    }
    this.#options = options;
    this.#slots = new Slots(Math.max(1, Math.floor(concurrency)));
  }
  hash(password: string): Promise<string> {
    return this.#slots.run(() => hash(password, { algorithm: ARGON2ID as never, ...this.#options }));
  }
  async verify(stored: string, password: string): Promise<boolean> {
    try {
      return await this.#slots.run(() => verify(stored, password));
    } catch {
      return false;
    }
  }
}

/** A counting semaphore: at most `size` tasks running, the others queued in arrival order. */
export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}
