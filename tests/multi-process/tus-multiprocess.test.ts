import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Upload, type HttpRequest } from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { VERSION } from '../harness/http.js';
import { startServer, type ServerProcess } from '../harness/spawn.js';
import { sha, uploaderOn, type Uploader } from './uploader.js';

/**
 * Resumable (tus) uploads across server processes over one database and one blob directory: an
 * upload begun on one process resumes on another from the offset the first acknowledged, two
 * PATCHes at one offset sent to two processes keep one, and a process killed mid-PATCH leaves the
 * offset it had acknowledged, from which the upload resumes and finalizes, charged once.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('tus-multiprocess.test.ts: PostgreSQL SKIPPED: PG_URL is not set; SQLite runs.');

const backends: readonly {
  name: string;
  skip: boolean;
  database: () => Promise<{ env: Record<string, string>; drop(): Promise<void> }>;
}[] = [
  { name: 'SQLite', skip: false, database: async () => ({ env: {}, drop: async () => undefined }) },
  {
    name: 'PostgreSQL',
    skip: !PG_URL,
    database: async () => {
      const db: ScratchDatabase = await createScratchDatabase(PG_URL!, 'tus');
      return { env: { SVC_DATABASE_URL: db.url }, drop: () => db.drop() };
    },
  },
];

const TUS = { 'tus-resumable': '1.0.0' };

for (const backend of backends) {
  describe.skipIf(backend.skip)(`tus uploads across two server processes: ${backend.name}`, { timeout: 90_000 }, () => {
    let dataDir: string;
    let drop: () => Promise<void>;
    let env: Record<string, string>;
    const servers: ServerProcess[] = [];
    let u: Uploader;

    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'sr-tus-'));
      const db = await backend.database();
      drop = db.drop;
      env = {
        SVC_DATA_DIR: dataDir,
        SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
        SVC_BASE_URL: 'http://127.0.0.1:8080',
        ...db.env,
      };
      for (let i = 0; i < 2; i++) servers.push(await startServer({ env }));
      u = await uploaderOn(servers[0]!.url, 'tus');
    }, 60_000);
    afterAll(async () => {
      for (const s of servers) await s.stop();
      await drop?.();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const auth = () => ({ authorization: `Bearer ${u.token}`, 'x-svc-protocol': VERSION });
    const head = async (server: ServerProcess, id: string) => {
      const r = await fetch(`${server.url}/upload-tus/${id}`, { method: 'HEAD', headers: { ...auth(), ...TUS } });
      expect(r.status).toBe(200);
      return Number(r.headers.get('upload-offset'));
    };
    const create = async (server: ServerProcess, length: number) => {
      const r = await fetch(`${server.url}/upload-tus`, {
        method: 'POST',
        headers: {
          ...auth(),
          ...TUS,
          'upload-length': String(length),
          'upload-metadata': `device_id ${Buffer.from('phone').toString('base64')}`,
        },
      });
      expect(r.status).toBe(201);
      return r.headers.get('location')!.split('/').pop()!;
    };
    const patch = (server: ServerProcess, id: string, offset: number, body: BodyInit) =>
      fetch(`${server.url}/upload-tus/${id}`, {
        method: 'PATCH',
        headers: {
          ...auth(),
          ...TUS,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
        },
        body,
        duplex: 'half',
      } as RequestInit);

    it('tus-js-client begins on one process, is cut off, and resumes on the other from the offset the first acknowledged', async () => {
      const data = new Uint8Array(randomBytes(512 * 1024));
      const headers = { Authorization: `Bearer ${u.token}`, 'X-Svc-Protocol': VERSION };
      const url = await new Promise<string>((resolve, reject) => {
        let stopped = false;
        const up: Upload = new Upload(Buffer.from(data), {
          endpoint: `${servers[0]!.url}/upload-tus`,
          headers,
          metadata: { device_id: 'phone', content_hash: sha(data) },
          chunkSize: 128 * 1024,
          retryDelays: [],
          onChunkComplete: (_chunk, accepted) => {
            if (!stopped && accepted >= 256 * 1024) {
              stopped = true;
              void up.abort().then(() => resolve(up.url!));
            }
          },
          onError: (e) => (stopped ? undefined : reject(e)),
          onSuccess: () => reject(new Error('the upload should have been cut off')),
        });
        up.start();
      });
      const id = url.split('/').pop()!;
      const held = await head(servers[1]!, id);
      expect(held).toBe(await head(servers[0]!, id));
      expect(held).toBeGreaterThanOrEqual(256 * 1024);
      const offsets: number[] = [];
      await new Promise<void>((resolve, reject) => {
        new Upload(Buffer.from(data), {
          uploadUrl: `${servers[1]!.url}/upload-tus/${id}`,
          headers,
          chunkSize: 128 * 1024,
          retryDelays: [],
          onBeforeRequest: (req: HttpRequest) => {
            if (req.getMethod() === 'PATCH') offsets.push(Number(req.getHeader('Upload-Offset')));
          },
          onSuccess: () => resolve(),
          onError: reject,
        }).start();
      });
      expect(offsets[0]).toBe(held);
      await u.finalize(id, data);
      const blob = await fetch(`${servers[1]!.url}/v1/blobs/${sha(data)}`, { headers: auth() });
      expect(
        createHash('sha256')
          .update(new Uint8Array(await blob.arrayBuffer()))
          .digest('hex'),
      ).toBe(sha(data));
    });

    it('two PATCHes at one offset, one to each process: one 204, the other 409, and both processes then agree on the offset', async () => {
      const id = await create(servers[0]!, 8 * 1024 * 1024);
      const bodies = [new Uint8Array(4 * 1024 * 1024).fill(1), new Uint8Array(3 * 1024 * 1024).fill(2)];
      const answers = await Promise.all([
        patch(servers[0]!, id, 0, bodies[0]! as unknown as BodyInit),
        patch(servers[1]!, id, 0, bodies[1]! as unknown as BodyInit),
      ]);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([204, 409]);
      const winner = answers.findIndex((a) => a.status === 204);
      const offset = await head(servers[0]!, id);
      expect(offset).toBe(bodies[winner]!.length);
      expect(await head(servers[1]!, id)).toBe(offset);
      expect(answers[1 - winner]!.headers.get('upload-offset')).toBe(String(offset));
    });

    it('a process killed mid-PATCH leaves the offset it acknowledged; the upload resumes on a restarted process, finalizes, and is charged once', async () => {
      const data = new Uint8Array(randomBytes(6 * 1024 * 1024));
      const id = await create(servers[0]!, data.length);
      const first = 1024 * 1024;
      expect((await patch(servers[0]!, id, 0, data.slice(0, first) as unknown as BodyInit)).status).toBe(204);
      // A body that sends a megabyte and then waits: the process is killed while it reads it.
      let sent!: () => void;
      const halfway = new Promise<void>((go) => (sent = go));
      const hanging = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(data.slice(first, 2 * first));
          sent();
        },
      });
      const cut = patch(servers[0]!, id, first, hanging).catch((e: unknown) => e);
      await halfway;
      // Killed with the run half received (or not yet begun): either way no part of it was acknowledged.
      const victim = servers[0]!;
      await victim.kill();
      expect(await cut).toBeInstanceOf(Error);
      servers[0] = await startServer({ env });
      expect(await head(servers[1]!, id)).toBe(first);
      expect(await head(servers[0]!, id)).toBe(first);
      expect((await patch(servers[0]!, id, first, data.slice(first) as unknown as BodyInit)).status).toBe(204);
      // The first process's address went with it: the restarted one and the other one serve the rest.
      const used = async () =>
        (await (await fetch(`${servers[1]!.url}/quota`, { headers: auth() })).json()) as {
          used: number;
          reserved: number;
        };
      const finalize = () =>
        fetch(`${servers[0]!.url}/upload/${id}/finalize`, {
          method: 'POST',
          headers: { ...auth(), 'content-type': 'application/json' },
          body: JSON.stringify({ content_hash: sha(data) }),
        });
      const before = await used();
      expect((await finalize()).status).toBe(200);
      // The reservation became a charge of exactly the bytes; finalizing again charges nothing more.
      const after = await used();
      expect([after.used, after.reserved]).toEqual([before.used, before.reserved - data.length]);
      expect((await finalize()).status).toBe(200);
      expect(await used()).toEqual(after);
      const blob = await fetch(`${servers[1]!.url}/v1/blobs/${sha(data)}`, { headers: auth() });
      expect(
        createHash('sha256')
          .update(new Uint8Array(await blob.arrayBuffer()))
          .digest('hex'),
      ).toBe(sha(data));
    });
  });
}
