import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReadBatch } from '@strongroom/sql-common';

describe('ReadBatch', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  let other: Database.Database;
  let reads: ReadBatch;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-reads-'));
    file = join(dir, 'db.sqlite');
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL); INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    );
    // Another connection to the same file: another process's writes, as far as SQLite can tell.
    other = new Database(file);
    reads = new ReadBatch(db);
  });
  afterEach(() => {
    for (const c of [db, other]) if (c.open) c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const readValue = (id: number) => () =>
    (db.prepare('SELECT v FROM t WHERE id = ?').get(id) as { v: string } | undefined)?.v ?? null;

  it('runs the reads of one turn inside one read transaction, after the turn', async () => {
    const seenInside: boolean[] = [];
    const read = (id: number) => () => {
      seenInside.push(db.inTransaction);
      return readValue(id)();
    };
    const pending = [reads.run(read(1)), reads.run(read(2)), reads.run(read(3))];
    // Nothing ran yet: each read happens after every caller of the turn asked.
    expect(seenInside).toEqual([]);
    expect(await Promise.all(pending)).toEqual(['one', 'two', 'three']);
    expect(seenInside).toEqual([true, true, true]);
    expect(reads.shared).toBe(1);
    // The transaction is over: a writer on this connection is not blocked behind it.
    expect(db.inTransaction).toBe(false);
  });

  it('a lone read runs outside any transaction', async () => {
    let inside: boolean | null = null;
    const v = await reads.run(() => {
      inside = db.inTransaction;
      return readValue(2)();
    });
    expect(v).toBe('two');
    expect(inside).toBe(false);
    expect(reads.shared).toBe(0);
  });

  it('sees a change another connection committed before the read was asked (revocation bites at once)', async () => {
    // A first batch takes a snapshot; the next must not be served from it.
    expect(await Promise.all([reads.run(readValue(1)), reads.run(readValue(2))])).toEqual(['one', 'two']);
    other.prepare("UPDATE t SET v = 'revoked' WHERE id = 1").run();
    expect(await Promise.all([reads.run(readValue(1)), reads.run(readValue(2))])).toEqual(['revoked', 'two']);
    // Even a change committed after the read was asked but before the batch ran is seen.
    const pending = Promise.all([reads.run(readValue(2)), reads.run(readValue(3))]);
    other.prepare("UPDATE t SET v = 'gone' WHERE id = 3").run();
    expect(await pending).toEqual(['two', 'gone']);
  });

  it('a read that throws fails alone; the others of its batch are answered', async () => {
    const outcomes = await Promise.allSettled([
      reads.run(readValue(1)),
      reads.run(() => db.prepare('SELECT nope FROM t').get()),
      reads.run(() => {
        throw new Error('broken read');
      }),
      reads.run(readValue(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[0] as PromiseFulfilledResult<string>).value).toBe('one');
    expect((outcomes[3] as PromiseFulfilledResult<string>).value).toBe('three');
    expect(db.inTransaction).toBe(false);
  });

  it('inside a transaction someone left open, reads join it and leave it open', async () => {
    db.exec('BEGIN');
    db.prepare("UPDATE t SET v = 'uncommitted' WHERE id = 1").run();
    const values = await Promise.all([reads.run(readValue(1)), reads.run(readValue(2))]);
    expect(values).toEqual(['uncommitted', 'two']);
    // Not committed behind its owner's back.
    expect(db.inTransaction).toBe(true);
    expect(reads.shared).toBe(0);
    db.exec('ROLLBACK');
    expect(readValue(1)()).toBe('one');
  });

  it('splits a long queue into batches of at most maxBatch, each in its own transaction', async () => {
    const small = new ReadBatch(db, { maxBatch: 4 });
    const values = await Promise.all(Array.from({ length: 10 }, (_, i) => small.run(readValue((i % 3) + 1))));
    expect(values).toEqual(Array.from({ length: 10 }, (_, i) => ['one', 'two', 'three'][i % 3]));
    // 4 + 4 shared a transaction each; the last 2 as well.
    expect(small.shared).toBe(3);
  });

  it('a writer holding the write lock elsewhere does not hold the reads up', async () => {
    other.exec('BEGIN IMMEDIATE');
    other.prepare("UPDATE t SET v = 'not yet' WHERE id = 2").run();
    const values = await Promise.all([reads.run(readValue(1)), reads.run(readValue(2))]);
    other.exec('ROLLBACK');
    // The last committed state, not the writer's uncommitted one.
    expect(values).toEqual(['one', 'two']);
  });

  it('when the batch cannot start, every read in it fails (closed), none hangs', async () => {
    const pending = [reads.run(readValue(1)), reads.run(readValue(2))];
    db.close();
    const outcomes = await Promise.allSettled(pending);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  });
});
