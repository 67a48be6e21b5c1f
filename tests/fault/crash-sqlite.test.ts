import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';
import { MixedWorkload, seededRandom } from '../harness/fault/workload.js';

/**
 * Pulling the plug on SQLite: the real server under a mixed write load is killed with SIGKILL at a
 * random moment, restarted on the same data directory, and every write it acknowledged must be
 * there (sessions open, revocations biting, reservations present, TOTP steps used, resumable
 * uploads at the offset their last 204 named, or past a whole unanswered PATCH, never inside one),
 * with nothing it never acknowledged (reserved bytes bounded by acknowledged plus unanswered creations).
 * FAULT_SEED replays a run; FAULT_ITERATIONS sets the number of kills.
 */

const SEED = Number(process.env.FAULT_SEED ?? Math.floor(Math.random() * 1e9));
const ITERATIONS = Number(process.env.FAULT_ITERATIONS ?? 4);
const ENV = { SVC_QUOTA_HARD_BYTES: '6000' };

describe('SQLite: SIGKILL under a mixed write load, restart on the same data dir', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sr-crash-'));
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(`keeps every acknowledged write and nothing else (seed ${SEED})`, { timeout: 120_000 }, async () => {
    const rand = seededRandom(SEED);
    server = await startServerProcess({ dataDir, env: ENV });
    const load = new MixedWorkload({ seed: SEED });
    load.url = server.url;
    await load.setup();
    const checked: Record<string, number> = {};
    for (let i = 0; i < ITERATIONS; i++) {
      const abort = new AbortController();
      const running = load.run(abort.signal, 4);
      // The kill point: anywhere from just started to a few hundred writes into the load, counted
      // in acknowledged writes rather than milliseconds, so a slow machine kills as deep into the load.
      await load.acknowledgeMore(5 + Math.floor(rand() * 300));
      await server.kill();
      abort.abort();
      await running;
      server = await startServerProcess({ dataDir, env: ENV });
      load.url = server.url;
      const { problems, checks } = await load.verify();
      expect(problems, `seed ${SEED}, kill ${i + 1}`).toEqual([]);
      for (const [k, n] of Object.entries(checks)) checked[k] = (checked[k] ?? 0) + n;
    }
    const stats = load.stats();
    console.info(
      `crash-sqlite seed ${SEED}: ${ITERATIONS} kills, ${JSON.stringify(stats.byOp)} acknowledged, ${stats.unknown} unanswered, checks ${JSON.stringify(checked)}`,
    );
    expect(stats.violations, `seed ${SEED}`).toEqual([]);
    // The load really wrote, and each kind of write was really checked after a kill.
    for (const op of ['upload', 'refresh', 'login', 'revoke', 'totp'])
      expect(stats.byOp[op] ?? 0, `${op} acknowledged (seed ${SEED})`).toBeGreaterThan(0);
    for (const k of ['sessions', 'revocations', 'uploads', 'totpReplays'])
      expect(checked[k] ?? 0, `${k} checked (seed ${SEED})`).toBeGreaterThan(0);
    expect(stats.unknown, 'some requests were cut by the kills').toBeGreaterThan(0);
  });

  it(`the checks catch a server that lost its latest writes (seed ${SEED})`, { timeout: 60_000 }, async () => {
    // The same load, but restarted on a copy of the database taken before its last second of writes.
    const live = mkdtempSync(join(tmpdir(), 'sr-crash-live-'));
    const stale = mkdtempSync(join(tmpdir(), 'sr-crash-stale-'));
    try {
      let s = await startServerProcess({ dataDir: live, env: ENV });
      const load = new MixedWorkload({ seed: SEED + 1 });
      load.url = s.url;
      await load.setup();
      const burst = async () => {
        const abort = new AbortController();
        const running = load.run(abort.signal, 4);
        await load.acknowledgeMore(50);
        abort.abort();
        await running;
      };
      await burst();
      // Quiet: every acknowledged write is committed, so the files copied now are a consistent snapshot.
      for (const f of ['strongroom.db', 'strongroom.db-wal'])
        if (existsSync(join(live, f))) cpSync(join(live, f), join(stale, f));
      await burst();
      await s.kill();
      s = await startServerProcess({ dataDir: stale, env: ENV });
      load.url = s.url;
      try {
        const { problems } = await load.verify();
        expect(problems.length, 'writes acknowledged after the snapshot are reported missing').toBeGreaterThan(0);
      } finally {
        await s.kill();
      }
    } finally {
      rmSync(live, { recursive: true, force: true });
      rmSync(stale, { recursive: true, force: true });
    }
  });
});
