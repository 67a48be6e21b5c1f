import { randomBytes } from '@noble/hashes/utils.js';
import { uuidv7 } from '@strongroom/core';

/** A fresh UUIDv7 (time-ordered, 74 random bits), as upgrade intents and other client-made ids need. */
export function newUuidV7(now: number = Date.now()): string {
  return uuidv7(now, randomBytes(10));
}
