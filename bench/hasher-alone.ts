/**
 * The storm mode's yardstick: argon2id verifications per second with the server's own hasher and
 * parameters, HASH_CONCURRENCY (default 20) in flight, for HASH_SECONDS (default 3), in a process
 * of its own (started on the server's cores). Prints one JSON line: { verifies, seconds }.
 */
import { Argon2Hasher } from '@strongroom/adapters-node';
import { PASSWORD } from './lib.js';

const seconds = Number(process.env.HASH_SECONDS ?? 3);
const concurrency = Number(process.env.HASH_CONCURRENCY ?? 20);
const hasher = new Argon2Hasher();
const stored = await hasher.hash(PASSWORD);
// Warm-up: the first calls pay for the thread pool and the allocator.
await Promise.all(Array.from({ length: 4 }, () => hasher.verify(stored, PASSWORD)));

let verifies = 0;
const started = performance.now();
const deadline = started + seconds * 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) {
      if (!(await hasher.verify(stored, PASSWORD))) throw new Error('verify failed');
      verifies++;
    }
  }),
);
process.stdout.write(`${JSON.stringify({ verifies, seconds: (performance.now() - started) / 1000 })}\n`);
