import type Database from 'better-sqlite3';
import { asc, eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  decideAppend,
  type Appended,
  type AppendRefusal,
  type UploadSegment,
  type UploadSegments,
} from '@strongroom/core';
import { groupCommitOf, type GroupCommit } from '@strongroom/sql-common';
import { uploadSegments, uploadSessions } from './schema/index.js';

/**
 * Resumable uploads' runs over SQLite. An append reads the session and its runs, asks core's
 * `decideAppend` and writes, synchronously inside the connection's group commit: nothing of this
 * process interleaves, SQLite's write lock orders other processes, and the caller is answered only
 * after the log's fsync (the offset a HEAD reads is on disk).
 */
export class SqliteUploadSegments implements UploadSegments {
  readonly #db: BetterSQLite3Database;
  readonly #commits: GroupCommit;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
    this.#commits = groupCommitOf(sqlite);
  }

  async listSegments(uploadId: string): Promise<readonly UploadSegment[]> {
    return this.#db
      .select()
      .from(uploadSegments)
      .where(eq(uploadSegments.uploadId, uploadId))
      .orderBy(asc(uploadSegments.start))
      .all();
  }

  async appendSegment(segment: UploadSegment, now: number): Promise<Appended | AppendRefusal> {
    return this.#commits.run(() => {
      const session =
        this.#db.select().from(uploadSessions).where(eq(uploadSessions.id, segment.uploadId)).get() ?? null;
      const runs = this.#db.select().from(uploadSegments).where(eq(uploadSegments.uploadId, segment.uploadId)).all();
      const decided = decideAppend({ session, segments: runs }, segment, now);
      if (typeof decided === 'string') return decided;
      this.#db.insert(uploadSegments).values(segment).run();
      if (session!.state === 'Pending')
        this.#db
          .update(uploadSessions)
          .set({ state: 'Uploading' })
          .where(eq(uploadSessions.id, segment.uploadId))
          .run();
      return decided;
    });
  }
}
