import { randomBytes } from 'node:crypto';
import type { Clock, Logger, Random } from '@strongroom/core';

export const systemClock: Clock = { now: () => Date.now() };

export const cryptoRandom: Random = { bytes: (length) => new Uint8Array(randomBytes(length)) };

/** One JSON object per line on stdout. Field values are whatever callers pass: never secrets. */
export class JsonLogger implements Logger {
  readonly #write: (line: string) => void;
  constructor(write: (line: string) => void = (line) => process.stdout.write(line + '\n')) {
    this.#write = write;
  }
  #log(level: string, event: string, fields: Record<string, unknown> = {}): void {
    this.#write(JSON.stringify({ ts: new Date().toISOString(), level, event, ...fields }));
  }
  info(event: string, fields?: Record<string, unknown>): void {
    this.#log('info', event, fields);
  }
  warn(event: string, fields?: Record<string, unknown>): void {
    this.#log('warn', event, fields);
  }
  error(event: string, fields?: Record<string, unknown>): void {
    this.#log('error', event, fields);
  }
}
