import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit, HandleLoad, ReadBatch } from '@strongroom/sql-common';

describe('GroupCommit', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  let group: GroupCommit;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-group-'));
    file = join(dir, 'db.sqlite');
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.exec(
      'CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL, p INTEGER REFERENCES parent(id))',
    );
    group = new GroupCommit(db);
  });
  afterEach(() => {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insert =
    (id: number, v: string | null, p: number | null = null) =>
    () =>
      db.prepare('INSERT INTO t (id, v, p) VALUES (?, ?, ?)').run(id, v, p).changes;
  const ids = (conn = db) => (conn.prepare('SELECT id FROM t ORDER BY id').all() as { id: number }[]).map((r) => r.id);

  it('commits the writes of one turn together, once, and settles each caller after the commit', async () => {
    const pending = Array.from({ length: 50 }, (_, i) => group.run(insert(i + 1, `v${i}`)));
    // Nothing is written (nor acknowledged) before the batch runs.
    expect(ids()).toEqual([]);
    const results = await Promise.all(pending);
    expect(results).toEqual(Array(50).fill(1));
    expect(group.commits).toBe(1);
    // Durable for any other connection the moment the promises settle.
    const other = new Database(file, { readonly: true });
    expect(ids(other)).toHaveLength(50);
    other.close();
  });

  it('rolls back a failing write alone; the rest of its batch commits', async () => {
    const outcomes = await Promise.allSettled([
      group.run(insert(1, 'a')),
      group.run(insert(2, null)),
      group.run(insert(3, 'c')),
      group.run(insert(1, 'again')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect(ids()).toEqual([1, 3]);
    expect(group.commits).toBe(1);
  });

  it('a write of several statements is all or nothing within the batch', async () => {
    const twoThenFail = () => {
      insert(10, 'x')();
      insert(11, 'y')();
      throw new Error('changed my mind');
    };
    const outcomes = await Promise.allSettled([group.run(twoThenFail), group.run(insert(12, 'z'))]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(ids()).toEqual([12]);
  });

  it('a failing COMMIT keeps nothing of the batch and rejects every caller in it', async () => {
    // A deferred foreign key is checked only at COMMIT: the one real way to make COMMIT fail here.
    db.pragma('defer_foreign_keys = ON');
    const outcomes = await Promise.allSettled([
      group.run(insert(1, 'a')),
      group.run(insert(2, 'b', 999)),
      group.run(insert(3, 'c')),
    ]);
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
    expect(db.inTransaction).toBe(false);
    expect(ids()).toEqual([]);
    // The connection is usable afterwards.
    await group.run(insert(4, 'd'));
    expect(ids()).toEqual([4]);
  });

  it('splits a long queue into batches of at most maxBatch', async () => {
    const small = new GroupCommit(db, { maxBatch: 8 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => small.run(insert(i + 1, 'v'))));
    expect(small.commits).toBe(3);
    expect(ids()).toHaveLength(20);
  });

  it('writes queued by callers that awaited an earlier batch land in a later one, in order', async () => {
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3].map(async (i) => {
        await group.run(insert(i, 'first'));
        order.push(i);
        await group.run(insert(i + 10, 'second'));
      }),
    );
    expect(order).toEqual([1, 2, 3]);
    expect(ids()).toEqual([1, 2, 3, 11, 12, 13]);
    expect(group.commits).toBe(2);
  });

  it('while reads keep arriving on the connection, writes of several turns share one commit', async () => {
    const load = new HandleLoad();
    const held = new GroupCommit(db, { load, holdMs: 60_000 });
    const reads = new ReadBatch(db, { load });
    const turn = () => new Promise<void>((r) => setImmediate(r));
    let reading = true;
    // A steady trickle of reads: one per turn, as a loaded server's GETs would bring.
    const readLoop = (async () => {
      while (reading) await reads.run(() => ids().length);
    })();
    const writes = [held.run(insert(1, 'a'))];
    await turn();
    writes.push(held.run(insert(2, 'b')));
    await turn();
    writes.push(held.run(insert(3, 'c')));
    await turn();
    expect(held.commits).toBe(0);
    reading = false;
    await readLoop;
    await Promise.all(writes);
    expect(held.commits).toBe(1);
    expect(ids()).toEqual([1, 2, 3]);
  });

  describe('the WAL fsync off the event loop', () => {
    /** A sync the test releases by hand, recording each call. */
    function heldSync() {
      const waiting: ((error: Error | null) => void)[] = [];
      const paths: string[] = [];
      return {
        waiting,
        paths,
        sync: (path: string, done: (error: Error | null) => void) => {
          paths.push(path);
          waiting.push(done);
        },
      };
    }
    const tick = () => new Promise((r) => setImmediate(r));
    /** One write per turn, so each commits in its own batch. */
    async function oneBatchEach(g: GroupCommit, ...ids: number[]): Promise<Promise<number>[]> {
      const pending: Promise<number>[] = [];
      for (const id of ids) {
        pending.push(g.run(insert(id, `v${id}`)));
        await tick();
      }
      return pending;
    }

    it('answers nobody before the WAL fsync returns, though the batch is already committed', async () => {
      const held = heldSync();
      const g = new GroupCommit(db, { sync: held.sync });
      let answered = 0;
      const pending = [1, 2, 3].map((i) => g.run(insert(i, 'v')).then(() => answered++));
      await tick();
      await tick();
      expect(ids()).toEqual([1, 2, 3]);
      expect(answered).toBe(0);
      expect(held.paths).toEqual([`${file}-wal`]);
      // Writes outside the group still sync in their own COMMIT.
      expect(db.pragma('synchronous', { simple: true })).toBe(2);
      held.waiting.shift()!(null);
      await Promise.all(pending);
      expect(answered).toBe(3);
    });

    it('writes handed on while an fsync runs wait for it, then commit together and share the next one', async () => {
      const held = heldSync();
      const g = new GroupCommit(db, { sync: held.sync });
      const [first, second, third] = await oneBatchEach(g, 1, 2, 3);
      // Only the first committed: nothing is written into the WAL while it is being synced.
      expect(g.commits).toBe(1);
      expect(ids()).toEqual([1]);
      expect(held.waiting).toHaveLength(1);
      held.waiting.shift()!(null);
      await first;
      // The two that waited committed in one transaction, and their fsync runs.
      expect(g.commits).toBe(2);
      expect(ids()).toEqual([1, 2, 3]);
      expect(held.waiting).toHaveLength(1);
      held.waiting.shift()!(null);
      await Promise.all([second, third]);
      expect(held.waiting).toHaveLength(0);
    });

    it('a failed fsync rejects its callers and every later write: nothing more is acknowledged', async () => {
      const held = heldSync();
      const g = new GroupCommit(db, { sync: held.sync });
      const [first, second] = await oneBatchEach(g, 1, 2);
      held.waiting.shift()!(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
      await expect(first).rejects.toThrow(/EIO/);
      await expect(second).rejects.toThrow(/EIO/);
      await expect(g.run(insert(3, 'c'))).rejects.toThrow(/EIO/);
      // The write that waited for the failed fsync never ran.
      expect(ids()).toEqual([1]);
    });

    it('counts a committed write until its fsync returned: past the bound a write is refused at once with error.server.busy and never runs', async () => {
      const held = heldSync();
      const load = new HandleLoad();
      load.queueBound = 2;
      const g = new GroupCommit(db, { sync: held.sync, load });
      const [first, second] = await oneBatchEach(g, 1, 2);
      // One committed and waiting for its fsync, one waiting to commit after it: the queue is full.
      expect(ids()).toEqual([1]);
      expect(g.held).toBe(2);
      let ran = false;
      await expect(
        g.run(() => {
          ran = true;
          return insert(3, 'c')();
        }),
      ).rejects.toMatchObject({ code: 'error.server.busy' });
      await tick();
      expect(ran).toBe(false);
      expect(ids()).toEqual([1]);
      // Once the fsync covering the first returned, one more fits.
      held.waiting.shift()!(null);
      await first;
      expect(ids()).toEqual([1, 2]);
      expect(g.held).toBe(1);
      const third = g.run(insert(3, 'c'));
      await tick();
      held.waiting.shift()!(null);
      await second;
      held.waiting.shift()!(null);
      await third;
      expect(ids()).toEqual([1, 2, 3]);
      expect(g.held).toBe(0);
    });

    it('syncs the real WAL file on a file database, and not at all in memory', async () => {
      await Promise.all([group.run(insert(1, 'a')), group.run(insert(2, 'b'))]);
      expect(group.syncs).toBe(1);
      const memory = new Database(':memory:');
      memory.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL, p INTEGER)');
      const g = new GroupCommit(memory);
      await g.run(() => memory.prepare('INSERT INTO t (id, v) VALUES (1, ?)').run('x').changes);
      expect(g.syncs).toBe(0);
      memory.close();
    });

    it('leaves a connection that does not sync at COMMIT as it is', async () => {
      db.pragma('synchronous = NORMAL');
      const held = heldSync();
      const g = new GroupCommit(db, { sync: held.sync });
      await g.run(insert(1, 'a'));
      expect(held.paths).toEqual([]);
      expect(db.pragma('synchronous', { simple: true })).toBe(1);
    });
  });
});
