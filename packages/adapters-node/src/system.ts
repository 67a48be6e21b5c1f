import { randomBytes } from 'node:crypto';
import { isoTimestamp, type Clock, type Logger, type Random } from '@strongroom/core';

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Bytes from the operating system's CSPRNG, drawn from a 4 KiB pool that one call refills: a request
 * needs ten or thirty-two, and a system call for each costs far more than copying them out of a
 * pool. Every byte is handed out once, as a copy, and wiped from the pool as it goes.
 */
export function pooledRandom(poolSize = 4096): Random {
  let pool = Buffer.alloc(0);
  let at = 0;
  return {
    bytes(length) {
      if (length > poolSize / 4) return new Uint8Array(randomBytes(length));
      if (at + length > pool.length) {
        pool = randomBytes(poolSize);
        at = 0;
      }
      const out = new Uint8Array(pool.subarray(at, at + length));
      pool.fill(0, at, at + length);
      at += length;
      return out;
    },
  };
}

export const cryptoRandom: Random = pooledRandom();

/** True when the string is printable ASCII without a quote or backslash: JSON as it stands. */
function isPlain(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * One value as JSON. Log fields are mostly short plain strings and numbers, written here directly
 * at about twice the speed of JSON.stringify on the whole record; anything else goes through it.
 */
function jsonValue(value: unknown): string {
  if (typeof value === 'string') return isPlain(value) ? `"${value}"` : JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  return JSON.stringify(value) ?? 'null';
}

/** `,"key":` for the field names seen so far: the same few names come with every request. */
const FIELD_PREFIX = new Map<string, string>();
function fieldPrefix(key: string): string {
  const prefix = `,${jsonValue(key)}:`;
  // Names are the code's own literals; the bound only guards against a caller that makes them up.
  if (FIELD_PREFIX.size < 256) FIELD_PREFIX.set(key, prefix);
  return prefix;
}

/**
 * The loggers holding lines not yet written, flushed by one exit listener for the whole process: a
 * listener per logger would keep every logger ever made alive and, past ten, make Node warn of a
 * leak (the tests make hundreds). A logger is here only while it holds lines.
 */
const holdingLines = new Set<JsonLogger>();
let exitHookInstalled = false;
function flushAllAtExit(): void {
  for (const logger of holdingLines) logger.flush();
}

/**
 * One JSON object per line on stdout. Field values are whatever callers pass: never secrets.
 *
 * Lines are gathered and written together: stdout is written synchronously on Linux (a file, a
 * pipe, /dev/null alike), and one write per event-loop turn was still a tenth of the server's time
 * on the authenticated read. Info lines wait at most `flushMs` (or until `maxPendingBytes` have
 * gathered); a warning or an error is written at the end of its turn, with everything before it.
 * Pending lines are written synchronously at exit, so only a process killed outright (SIGKILL, a
 * power cut) can lose them: at most `flushMs` of info lines.
 */
export class JsonLogger implements Logger {
  readonly #write: (chunk: Uint8Array) => void;
  readonly #flushMs: number;
  readonly #maxPendingBytes: number;
  /**
   * Lines go into this buffer as UTF-8 as soon as they are made, so they die young: held as
   * strings until the write, they outlived the young generation and cost a copy each.
   */
  #buffer: Buffer;
  #at = 0;
  /** A flush at the end of this turn (a warning or an error is pending). */
  #soon = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #isoAt = -1;
  #iso = '';
  /** The fields every line carries (say, which worker process wrote it), rendered once. */
  readonly #fixed: string;

  constructor(
    write: (chunk: Uint8Array) => void = (chunk) => process.stdout.write(chunk),
    options: { flushMs?: number; maxPendingBytes?: number; fields?: Record<string, string | number> } = {},
  ) {
    this.#write = write;
    this.#fixed = Object.entries(options.fields ?? {})
      .map(([key, value]) => fieldPrefix(key) + jsonValue(value))
      .join('');
    this.#flushMs = options.flushMs ?? 25;
    this.#maxPendingBytes = options.maxPendingBytes ?? 32 * 1024;
    this.#buffer = Buffer.allocUnsafe(this.#maxPendingBytes + 4096);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', flushAllAtExit);
    }
  }

  /** Writes every pending line now. */
  flush(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#soon = false;
    holdingLines.delete(this);
    if (this.#at === 0) return;
    // A fresh buffer for what comes next: the written one is never touched again, so a writer
    // that keeps the chunk (an asynchronous stdout) is safe.
    const chunk = this.#buffer.subarray(0, this.#at);
    this.#buffer = Buffer.allocUnsafe(this.#buffer.length);
    this.#at = 0;
    this.#write(chunk);
  }

  #log(level: string, event: string, fields: Record<string, unknown> = {}): void {
    // Built as a string, with the timestamp formatted at most once per millisecond: this runs for
    // every request.
    const now = Date.now();
    if (now !== this.#isoAt) {
      this.#isoAt = now;
      this.#iso = isoTimestamp(now);
    }
    let line = `{"ts":"${this.#iso}","level":"${level}","event":${jsonValue(event)}`;
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += (FIELD_PREFIX.get(key) ?? fieldPrefix(key)) + jsonValue(value);
    }
    line += `${this.#fixed}}\n`;
    // A UTF-16 unit is at most three bytes of UTF-8: make room first if the line might not fit.
    if (this.#at + line.length * 3 > this.#buffer.length) {
      this.flush();
      if (line.length * 3 > this.#buffer.length) {
        this.#write(Buffer.from(line));
        return;
      }
    }
    if (this.#at === 0) holdingLines.add(this);
    this.#at += this.#buffer.write(line, this.#at);
    if (this.#at >= this.#maxPendingBytes) return this.flush();
    if (level !== 'info') {
      if (!this.#soon) {
        this.#soon = true;
        setImmediate(() => this.#soon && this.flush());
      }
      return;
    }
    if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.flush();
      }, this.#flushMs);
      // A pending line never keeps the process alive: exit writes it.
      this.#timer.unref();
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
