import { SecretBox } from '../secrets/secret-box.js';
import type { Random } from '../ports/random.js';
import { SeededRandom } from './seeded-random.js';

/** A server key for tests (fixed bytes): rings and boxes in tests seal under it. */
export const TEST_SECRET_KEY = new Uint8Array(32).fill(0x5a);

/** A SecretBox under the test key, with seeded IVs unless given a Random. */
export function testSecretBox(random: Random = new SeededRandom(0x5eed)): SecretBox {
  return new SecretBox({ key: TEST_SECRET_KEY, random });
}
