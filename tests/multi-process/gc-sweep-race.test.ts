import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobsAgree, verifyBlobs } from '@strongroom/core';
import { MemoryLogger } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { readConfig } from '@strongroom/server/config';
import { buildDeps, nodePlatform, openStores, type AppDeps, type Stores } from '@strongroom/server/deps';
import { VERSION } from '../harness/http.js';
import { startServer, type ServerProcess } from '../harness/spawn.js';
import { sha, uploaderOn } from './uploader.js';

/**
 * The GC sweep racing finalizes of the very bytes it collects, in two processes: a server process
 * takes uploads over HTTP while this process sweeps as `gc-sweep` does (the ledger's sweep, then
 * the staging sweep), over and over, on the same database and blob directory. Each round stores
 * some bytes, receives them again in a second upload, purges the first (its ledger row is the
 * sweep's to take) and finalizes the second; every upload acknowledged must be readable at the end. Before the sweep and the finalize checked each
 * other, about one upload in ten of these was acknowledged and then had no bytes.
 */

const PG_URL = pgUrlFromEnv();
/** Client loops running at once, and rounds each: ROUNDS * LOOPS uploads race the sweeps. */
const LOOPS = 6;
const ROUNDS = 15;

if (!PG_URL)
  console.warn(
    'gc-sweep-race.test.ts: PostgreSQL SKIPPED: PG_URL is not set (two processes need a PostgreSQL server); SQLite runs.',
  );

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
      const db: ScratchDatabase = await createScratchDatabase(PG_URL!, 'gcrace');
      return { env: { SVC_DATABASE_URL: db.url }, drop: () => db.drop() };
    },
  },
];

for (const backend of backends) {
  describe.skipIf(backend.skip)(
    `gc-sweep beside finalizes of the same bytes, two processes: ${backend.name}`,
    { timeout: 60_000 },
    () => {
      let dataDir: string;
      let drop: () => Promise<void>;
      let server: ServerProcess;
      let stores: Stores;
      let sweeper: AppDeps;

      beforeAll(async () => {
        dataDir = mkdtempSync(join(tmpdir(), 'sr-gc-race-'));
        const db = await backend.database();
        drop = db.drop;
        const env = {
          SVC_DATA_DIR: dataDir,
          SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
          SVC_BASE_URL: 'http://127.0.0.1:8080',
          SVC_QUOTA_SOFT_BYTES: '',
          SVC_QUOTA_HARD_BYTES: '1000000000',
          SVC_MAX_OPEN_UPLOADS: '1000',
          ...db.env,
        };
        server = await startServer({ env });
        // The sweeping process: the stores and services the CLI builds, over the same database and blobs.
        const config = readConfig(env);
        stores = await openStores(config);
        sweeper = await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() });
      }, 60_000);
      afterAll(async () => {
        await server?.stop();
        await stores?.close();
        await drop?.();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it('every acknowledged upload is readable afterwards, however the sweeps fell', async () => {
        const { token, call, received, finalize } = await uploaderOn(server.url, 'gc');

        let running = true;
        let sweeps = 0;
        const sweeping = (async () => {
          while (running) {
            await sweeper.quota.sweep();
            await sweeper.uploads.sweepStaging();
            sweeps++;
          }
        })();
        const acknowledged: { hash: string; data: Uint8Array }[] = [];
        try {
          await Promise.all(
            Array.from({ length: LOOPS }, async (_, loop) => {
              for (let round = 0; round < ROUNDS; round++) {
                const data = randomBytes(2048 + loop * 97 + round);
                const first = await received(data);
                await finalize(first, data);
                const again = await received(data);
                // Purged: its ledger row is the next sweep's to take, while the same bytes, received
                // again, are finalized.
                expect((await call('POST', `/v1/assets/${first}/trash`, { token })).status).toBe(200);
                expect((await call('DELETE', `/v1/assets/${first}`, { token })).status).toBe(204);
                await finalize(again, data);
                acknowledged.push({ hash: sha(data), data });
              }
            }),
          );
        } finally {
          running = false;
          await sweeping;
        }
        expect(sweeps).toBeGreaterThan(10);

        const lost: string[] = [];
        for (const { hash, data } of acknowledged) {
          const res = await fetch(`${server.url}/v1/blobs/${hash}`, {
            headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION },
          });
          const body = new Uint8Array(await res.arrayBuffer());
          if (res.status !== 200 || sha(body) !== sha(data)) lost.push(`${hash}: ${res.status}`);
        }
        expect(
          lost,
          `${lost.length} of ${acknowledged.length} acknowledged uploads lost their bytes (${sweeps} sweeps)`,
        ).toEqual([]);
        expect(acknowledged).toHaveLength(LOOPS * ROUNDS);
        // And the store agrees with the ledger: nothing referenced is missing, nothing unreferenced
        // stays, nothing is left aside or staged.
        await sweeper.quota.sweep();
        const report = await verifyBlobs((after, limit) => stores.quota.listBlobs(after, limit), stores.blobs.list());
        expect(blobsAgree(report), JSON.stringify(report)).toBe(true);
        expect(report.ledgerEntries).toBe(LOOPS * ROUNDS);
        const aside: string[] = [];
        for await (const q of stores.blobs.listQuarantined()) aside.push(q.id);
        for await (const id of stores.blobs.listStaged()) aside.push(id);
        expect(aside).toEqual([]);
      });
    },
  );
}
