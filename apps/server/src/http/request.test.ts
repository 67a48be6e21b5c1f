import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { describe, expect, it } from 'vitest';
import { HttpProblem } from './problem.js';
import { readLimited } from './request.js';

/** A context whose Node request is `stream` (the way @hono/node-server hands it to routes). */
const contextOf = (stream: Readable, headers: Record<string, string> = {}) =>
  ({ env: { incoming: Object.assign(stream, { headers }) } }) as unknown as Context;

describe('reading a body from Node’s request', () => {
  it('joins the chunks, in order, into a copy of its own', async () => {
    const chunks = [Buffer.from('{"a":'), Buffer.from('1'), Buffer.from('}')];
    expect(new TextDecoder().decode(await readLimited(contextOf(Readable.from(chunks)), 64))).toBe('{"a":1}');
    const one = Buffer.from('xyz');
    const read = await readLimited(contextOf(Readable.from([one])), 64);
    one[0] = 0x41;
    expect(new TextDecoder().decode(read)).toBe('xyz');
  });

  it('refuses past the limit with 413, and keeps draining so the answer can go out', async () => {
    let pulled = 0;
    const stream = new Readable({
      read() {
        pulled++;
        this.push(pulled <= 10 ? Buffer.alloc(40, 0x61) : null);
      },
    });
    const ended = new Promise((r) => stream.once('end', r));
    const refused = await readLimited(contextOf(stream), 100).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HttpProblem);
    expect((refused as HttpProblem).code).toBe('error.request.too_large');
    await ended;
    expect(pulled).toBe(11);
  });

  it('refuses a declared length past the limit before reading anything', async () => {
    const stream = Readable.from([Buffer.from('{}')]);
    await expect(
      readLimited(contextOf(stream, { 'content-length': '999' }), 100, 'error.upload.too_large'),
    ).rejects.toMatchObject({ code: 'error.upload.too_large' });
    expect(stream.readableEnded).toBe(false);
  });

  it('fails when the request closes before its body ended, and passes a stream error on', async () => {
    const cut = new Readable({ read() {} });
    cut.push(Buffer.from('{"a"'));
    const pending = readLimited(contextOf(cut), 64);
    setImmediate(() => cut.destroy());
    await expect(pending).rejects.toThrow('closed before its body ended');
    const broken = new Readable({ read() {} });
    const failing = readLimited(contextOf(broken), 64);
    setImmediate(() => broken.destroy(new Error('socket reset')));
    await expect(failing).rejects.toThrow('socket reset');
  });

  it('reads an ended request as empty', async () => {
    const stream = Readable.from([]);
    stream.resume();
    await new Promise((r) => stream.once('end', r));
    expect(await readLimited(contextOf(stream), 64)).toEqual(new Uint8Array(0));
  });
});
