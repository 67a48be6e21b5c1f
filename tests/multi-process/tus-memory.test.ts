import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../harness/http.js';
import { startServer, type ServerProcess } from '../harness/spawn.js';
import { uploaderOn, type Uploader } from './uploader.js';

/**
 * A resumable (tus) upload of 256 MiB into a real server process on the filesystem store, sent as
 * two PATCHes from a stream that is never whole anywhere: the server stages each run, streams the
 * runs into the session's bytes and finalize commits them, and its peak resident memory grows by
 * far less than the file.
 */

const MiB = 1024 * 1024;
const SIZE = 256 * MiB;
const HALF = 128 * MiB;

/** Bytes `from`..`to` of the upload, made as they are read, a MiB at a time. */
function part(from: number, to: number): ReadableStream<Uint8Array> {
  let at = from;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= to) return controller.close();
      const n = Math.min(MiB, to - at);
      controller.enqueue(new Uint8Array(n).fill(((at / MiB) * 37) & 0xff));
      at += n;
    },
  });
}

/** The process's peak resident set so far (Linux), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

describe('tus with flat memory in a server process (filesystem store)', { timeout: 300_000 }, () => {
  let dataDir: string;
  let server: ServerProcess;
  let u: Uploader;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sr-tus-mem-'));
    server = await startServer({
      env: {
        SVC_DATA_DIR: dataDir,
        SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
        SVC_BASE_URL: 'http://127.0.0.1:8080',
      },
    });
    u = await uploaderOn(server.url, 'tusmem');
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('256 MiB in two PATCHes, assembled and finalized: the peak RSS grows by less than 64 MiB', async () => {
    const expected = createHash('sha256');
    for await (const chunk of part(0, SIZE) as unknown as AsyncIterable<Uint8Array>) expected.update(chunk);
    const hash = expected.digest('hex');
    const auth = { authorization: `Bearer ${u.token}`, 'x-svc-protocol': VERSION, 'tus-resumable': '1.0.0' };
    const created = await fetch(`${server.url}/upload-tus`, {
      method: 'POST',
      headers: {
        ...auth,
        'upload-length': String(SIZE),
        'upload-metadata': `device_id ${Buffer.from('phone').toString('base64')}`,
      },
    });
    expect(created.status).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    const before = peakRss(server.child.pid!);
    for (const [from, to] of [
      [0, HALF],
      [HALF, SIZE],
    ] as const) {
      const r = await fetch(`${server.url}/upload-tus/${id}`, {
        method: 'PATCH',
        headers: { ...auth, 'upload-offset': String(from), 'content-type': 'application/offset+octet-stream' },
        body: part(from, to),
        duplex: 'half',
      } as RequestInit);
      expect([r.status, r.headers.get('upload-offset')]).toEqual([204, String(to)]);
    }
    const f = await fetch(`${server.url}/upload/${id}/finalize`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ content_hash: hash }),
    });
    expect(f.status).toBe(200);
    const grown = peakRss(server.child.pid!) - before;
    console.info(`tus 256 MiB: server peak RSS grew ${(grown / MiB).toFixed(1)} MiB`);
    expect(grown).toBeLessThan(64 * MiB);
  });
});
