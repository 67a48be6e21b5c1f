import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { JsonLogger, pooledRandom } from './system.js';

describe('JsonLogger', () => {
  it('writes one JSON object per line; a warning or an error writes everything pending at the end of its turn', async () => {
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()));
    log.info('a', { n: 1 });
    log.warn('b');
    log.error('c', { why: 'x' });
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toHaveLength(1);
    const lines = writes[0]!
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.event])).toEqual([
      ['info', 'a'],
      ['warn', 'b'],
      ['error', 'c'],
    ]);
    expect(lines[0]).toMatchObject({ n: 1, ts: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) });
    expect(lines[1]).toEqual({ ts: expect.any(String), level: 'warn', event: 'b' });
  });
  it('escapes what it is given, so a line is always valid JSON', async () => {
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()));
    log.info('quote"and\nnewline', { path: '/a"b\\c', nested: { x: [1, '2'] } });
    log.flush();
    expect(JSON.parse(writes[0]!)).toMatchObject({
      event: 'quote"and\nnewline',
      path: '/a"b\\c',
      nested: { x: [1, '2'] },
    });
  });

  it('writes every record as JSON.stringify would, leaving out undefined fields', () => {
    const value = fc.oneof(
      fc.string(),
      fc.string({ unit: 'grapheme' }),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 2 }),
    );
    fc.assert(
      fc.property(
        fc.string(),
        fc.dictionary(
          fc.string().filter((k) => !['ts', 'level', 'event', '__proto__'].includes(k)),
          value,
        ),
        (event, fields) => {
          const writes: string[] = [];
          const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()));
          log.info(event, fields);
          log.flush();
          expect(writes[0]!.endsWith('}\n')).toBe(true);
          const { ts, level, event: written, ...rest } = JSON.parse(writes[0]!);
          expect([typeof ts, level, written]).toEqual(['string', 'info', event]);
          expect(rest).toEqual(JSON.parse(JSON.stringify(fields)));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('holds info lines for up to flushMs, then writes them together', () => {
    // The logger's wait is a timer: fake timers step it exactly, with no real time passing.
    vi.useFakeTimers();
    onTestFinished(() => void vi.useRealTimers());
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()), { flushMs: 40 });
    log.info('one');
    vi.advanceTimersByTime(1);
    log.info('two');
    vi.advanceTimersByTime(38);
    expect(writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(writes).toHaveLength(1);
    expect(
      writes[0]!
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).event),
    ).toEqual(['one', 'two']);
    // The timer went with the write: the next line starts a new wait.
    log.info('three');
    vi.advanceTimersByTime(39);
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(writes).toHaveLength(2);
  });

  it('writes at once when maxPendingBytes have gathered, keeping the order', () => {
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()), {
      flushMs: 60_000,
      maxPendingBytes: 300,
    });
    for (let i = 0; i < 10; i++) log.info('line', { i, pad: 'x'.repeat(40) });
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((w) => w.length >= 300)).toBe(true);
    log.flush();
    const order = writes
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).i);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('writes a line longer than its buffer whole, after what was pending', () => {
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()), {
      flushMs: 60_000,
      maxPendingBytes: 200,
    });
    log.info('before');
    log.info('long', { text: 'é'.repeat(5000) });
    log.info('after');
    log.flush();
    const lines = writes
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.event)).toEqual(['before', 'long', 'after']);
    expect(lines[1].text).toBe('é'.repeat(5000));
  });

  it('flush() writes pending lines at once', () => {
    const writes: string[] = [];
    const log = new JsonLogger((chunk) => writes.push(Buffer.from(chunk).toString()));
    log.info('now');
    log.flush();
    expect(writes).toHaveLength(1);
    log.flush();
    expect(writes).toHaveLength(1);
  });

  it('any number of loggers add one exit listener between them (one each made Node warn of a leak past ten)', () => {
    const loggers = Array.from({ length: 3 }, () => new JsonLogger(() => undefined));
    const before = process.listenerCount('exit');
    for (let i = 0; i < 20; i++) loggers.push(new JsonLogger(() => undefined));
    expect(process.listenerCount('exit')).toBe(before);
  });

  it('writes the lines every logger still holds when the process exits', () => {
    const system = fileURLToPath(new URL('./system.ts', import.meta.url));
    const script = `import { JsonLogger } from ${JSON.stringify(system)};
      const a = new JsonLogger(undefined, { flushMs: 60_000 });
      const b = new JsonLogger(undefined, { flushMs: 60_000 });
      a.info('first'); b.info('second'); a.flush(); a.info('third');
      process.exit(0);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(
      out
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).event)
        .sort(),
    ).toEqual(['first', 'second', 'third']);
  });
});

describe('pooledRandom', () => {
  it('hands out the lengths asked for, never the same bytes twice, across pool refills', () => {
    const random = pooledRandom(64);
    const seen = new Set<string>();
    let total = 0;
    for (let i = 0; i < 200; i++) {
      const length = [10, 16, 1, 3][i % 4]!;
      const b = random.bytes(length);
      expect(b).toBeInstanceOf(Uint8Array);
      expect(b.length).toBe(length);
      if (length >= 10) {
        const hex = Buffer.from(b).toString('hex');
        expect(seen.has(hex)).toBe(false);
        seen.add(hex);
      }
      total += length;
    }
    expect(total).toBeGreaterThan(64 * 10);
  });

  it('returns copies: changing one does not touch what comes next or the pool', () => {
    const random = pooledRandom(64);
    const a = random.bytes(8);
    a.fill(0xff);
    const b = random.bytes(8);
    expect(Buffer.from(b).equals(Buffer.alloc(8, 0xff))).toBe(false);
    expect(a.buffer).not.toBe(b.buffer);
  });

  it('draws large requests straight from the operating system', () => {
    const random = pooledRandom(64);
    const big = random.bytes(1000);
    expect(big.length).toBe(1000);
    // Not all zeros: it came from the CSPRNG, not an empty pool.
    expect(big.some((x) => x !== 0)).toBe(true);
  });

  it('looks uniform: every byte value turns up over 64 KiB', () => {
    const random = pooledRandom();
    const counts = new Array(256).fill(0);
    for (let i = 0; i < 8192; i++) for (const x of random.bytes(8)) counts[x]++;
    expect(Math.min(...counts)).toBeGreaterThan(100);
  });
});
