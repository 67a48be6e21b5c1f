import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { FsBlobStore } from '@strongroom/adapters-node';
import { startServer, type ServerProcess } from '../harness/spawn.js';
import { uploaderOn } from './uploader.js';

/**
 * The server's own staging sweep (SVC_STAGING_SWEEP_S), in two server processes over one database
 * and blob directory: bytes received for sessions that then lapse are removed by the servers
 * themselves, no operator involved, and the lease lets one process sweep per round.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('staging-sweep.test.ts: PostgreSQL SKIPPED: PG_URL is not set; SQLite runs.');

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
      const db: ScratchDatabase = await createScratchDatabase(PG_URL!, 'staging');
      return { env: { SVC_DATABASE_URL: db.url }, drop: () => db.drop() };
    },
  },
];

for (const backend of backends) {
  describe.skipIf(backend.skip)(
    `the staging sweep in two server processes: ${backend.name}`,
    { timeout: 60_000 },
    () => {
      let dataDir: string;
      let drop: () => Promise<void>;
      const servers: ServerProcess[] = [];

      beforeAll(async () => {
        dataDir = mkdtempSync(join(tmpdir(), 'sr-staging-'));
        const db = await backend.database();
        drop = db.drop;
        const env = {
          SVC_DATA_DIR: dataDir,
          SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
          SVC_BASE_URL: 'http://127.0.0.1:8080',
          SVC_UPLOAD_TTL_S: '2',
          SVC_STAGING_SWEEP_S: '1',
          ...db.env,
        };
        for (let i = 0; i < 2; i++) servers.push(await startServer({ env }));
      }, 60_000);
      afterAll(async () => {
        for (const s of servers) await s.stop();
        await drop?.();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it('staged bytes of sessions that lapsed go without an operator, swept by the servers one at a time', async () => {
        const u = await uploaderOn(servers[0]!.url, 'staging');
        const ids = [await u.received(randomBytes(1000)), await u.received(randomBytes(1500))];
        const blobs = new FsBlobStore(join(dataDir, 'blobs'));
        const staged = async () => {
          const out: string[] = [];
          for await (const id of blobs.listStaged()) out.push(id);
          return out;
        };
        expect(await staged()).toEqual(expect.arrayContaining(ids));
        // The sessions lapse after 2 s; a sweep runs every second in each process. Waits for the
        // servers (bounded by the test's timeout), never for a fixed time.
        while ((await staged()).some((id) => ids.includes(id))) await new Promise((r) => setTimeout(r, 200));
        // The sweep removes the files before it logs what it removed, and the log line reaches this
        // process through a pipe: wait for it as well (a busy machine delays it), then count exactly.
        const discarded = () =>
          servers
            .flatMap((s) => s.events.filter((e) => e.event === 'staging.swept'))
            .reduce((n, e) => n + Number(e.discarded), 0);
        while (discarded() < ids.length) await new Promise((r) => setTimeout(r, 100));
        expect(discarded()).toBe(ids.length);
        for (const s of servers) expect(s.events.filter((e) => e.event === 'staging.sweep_failed')).toEqual([]);
      });
    },
  );
}
