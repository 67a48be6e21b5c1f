import { CoreError } from '../errors.js';
import type { PasswordHasher } from '../ports/password-hasher.js';

/** How many password checks may wait for a free hasher before sign-in sheds load (SVC_HASH_QUEUE). */
export const DEFAULT_HASH_QUEUE = 64;

/**
 * Sign-in load shedding (decisions.md, end of "Isolation, secrets and durability"): every password
 * hash and check (register, login, password change, reauthenticate) goes through this one bounded
 * queue. At most `running` run at once and at most `waiting` wait behind them; one more is refused
 * at once with `error.server.busy` (503, Retry-After: 1) before it hashes anything, so the request
 * does nothing. It refuses load, never an account: nothing is counted against anyone.
 */
export class BoundedHasher implements PasswordHasher {
  readonly #inner: PasswordHasher;
  readonly #running: number;
  readonly #waiting: number;
  #active = 0;
  readonly #queue: (() => void)[] = [];

  constructor(inner: PasswordHasher, bounds: { running: number; waiting: number }) {
    this.#inner = inner;
    this.#running = Math.max(1, Math.floor(bounds.running));
    this.#waiting = Math.max(0, Math.floor(bounds.waiting));
  }

  hash(password: string): Promise<string> {
    return this.#admit(() => this.#inner.hash(password));
  }

  verify(hash: string, password: string): Promise<boolean> {
    return this.#admit(() => this.#inner.verify(hash, password));
  }

  /** Checks running and waiting now (for metrics and tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.#active, waiting: this.#queue.length };
  }

  async #admit<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#running) {
      if (this.#queue.length >= this.#waiting) throw new CoreError('error.server.busy', 'Too many sign-ins at once; try again in a second.');
      // The slot is handed over by the finishing task, so a newcomer never overtakes a waiter.
      await new Promise<void>((go) => this.#queue.push(go));
    } else {
      this.#active++;
    }
    try {
      return await task();
    } finally {
      const next = this.#queue.shift();
      if (next) next();
      else this.#active--;
    }
  }
}
