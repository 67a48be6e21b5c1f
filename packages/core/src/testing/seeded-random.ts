import { sha256 } from '@noble/hashes/sha2.js';
import type { Random } from '../ports/random.js';

/** Deterministic bytes (SHA-256 in counter mode over a seed): reproducible tests, never production. */
export class SeededRandom implements Random {
  #counter = 0;
  readonly #seed: number;
  constructor(seed = 1) {
    this.#seed = seed;
  }
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let off = 0; off < length; off += 32) {
      const block = sha256(new TextEncoder().encode(`${this.#seed}:${this.#counter++}`));
      out.set(block.subarray(0, Math.min(32, length - off)), off);
    }
    return out;
  }
}
