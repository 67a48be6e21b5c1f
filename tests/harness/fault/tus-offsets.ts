/**
 * What a load knows of one resumable (tus) upload's offset when some PATCHes got no answer. A
 * PATCH names the offset it starts at and the server records it only there, so of the PATCHes sent
 * at one offset at most one lands: the durable offset is the last acknowledged one, or that plus
 * the length of one (any one) of the unanswered PATCHes sent since. Never between, never two.
 */
export class TusOffsets {
  /** The last offset the server named (a 204, or a 409 that told it). */
  offset = 0;
  /** The lengths of PATCHes sent at `offset` that got no answer; each may yet land, at most one will. */
  #unanswered: number[] = [];

  constructor(readonly size: number) {}

  /** Nothing sent yet that may have moved the offset. */
  get untouched(): boolean {
    return this.offset === 0 && this.#unanswered.length === 0;
  }

  /** A PATCH of `length` bytes at `offset` got no answer (or an unavailable one). */
  unanswered(length: number): void {
    this.#unanswered.push(length);
  }

  /** A 204 named `held`: that PATCH landed, so none of the unanswered ones at the old offset can. */
  acknowledged(held: number): void {
    this.offset = held;
    this.#unanswered = [];
  }

  /** Offsets the server may hold now. */
  possible(): number[] {
    return [this.offset, ...this.#unanswered.map((n) => this.offset + n)];
  }

  /** The server named `held` (204 or 409): false when no PATCH sent could have left it there. */
  told(held: number): boolean {
    if (!this.possible().includes(held)) return false;
    // At a new offset, every PATCH sent at the old one is refused should it still arrive.
    if (held !== this.offset) {
      this.offset = held;
      this.#unanswered = [];
    }
    return true;
  }

  /** Each offset the server may hold, as a message says it. */
  describe(): string {
    return [...new Set(this.possible())].join(' or ');
  }
}
