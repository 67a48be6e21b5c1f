import { randomBytes } from 'node:crypto';
import type { Clock, Logger, Random } from '@strongroom/core';

export const systemClock: Clock = { now: () => Date.now() };

export const cryptoRandom: Random = { bytes: (length) => new Uint8Array(randomBytes(length)) };

/**
 * One JSON object per line on stdout. Field values are whatever callers pass: never secrets.
 *
 * Lines are gathered and written once per event-loop turn: a write per request was a tenth of the
 * server's time on the authenticated path. Pending lines are flushed synchronously at exit.
 */
export class JsonLogger implements Logger {
  readonly #write: (chunk: string) => void;
  #pending: string[] = [];
  #scheduled = false;
  #isoAt = -1;
  #iso = '';

  constructor(write: (chunk: string) => void = (chunk) => process.stdout.write(chunk)) {
    this.#write = write;
    process.once('exit', () => this.flush());
  }

  /** Writes every pending line now. */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const chunk = this.#pending.join('');
    this.#pending = [];
    this.#write(chunk);
  }

  #log(level: string, event: string, fields: Record<string, unknown> = {}): void {
    // Built as a string around one JSON.stringify of the fields, with the timestamp formatted at most
    // once per millisecond: this runs for every request.
    const now = Date.now();
    if (now !== this.#isoAt) {
      this.#isoAt = now;
      this.#iso = new Date(now).toISOString();
    }
    const rest = JSON.stringify(fields);
    this.#pending.push(`{"ts":"${this.#iso}","level":"${level}","event":${JSON.stringify(event)}${rest === '{}' ? '}' : ',' + rest.slice(1)}\n`);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.flush());
    }
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
