import { asc, eq } from 'drizzle-orm';
import {
  decideAppend,
  type Appended,
  type AppendRefusal,
  type UploadSegment,
  type UploadSegments,
} from '@strongroom/core';
import type { PgDb } from './db.js';
import { uploadSegments, uploadSessions } from './schema/index.js';

/**
 * Resumable uploads' runs over PostgreSQL. An append locks the session row (FOR UPDATE: appends,
 * cancels and finalizes of one session take turns on it), reads its runs, asks core's
 * `decideAppend` and writes; the primary key (upload, start) refuses a second run at one offset
 * even so. It holds no payer lock, so it adds no lock order to the ledger's.
 */
export class PgUploadSegments implements UploadSegments {
  constructor(readonly db: PgDb) {}

  async listSegments(uploadId: string): Promise<readonly UploadSegment[]> {
    return this.db
      .select()
      .from(uploadSegments)
      .where(eq(uploadSegments.uploadId, uploadId))
      .orderBy(asc(uploadSegments.start));
  }

  async appendSegment(segment: UploadSegment, now: number): Promise<Appended | AppendRefusal> {
    return this.db.transaction(async (tx) => {
      const [session] = await tx
        .select()
        .from(uploadSessions)
        .where(eq(uploadSessions.id, segment.uploadId))
        .for('update');
      const runs = await tx.select().from(uploadSegments).where(eq(uploadSegments.uploadId, segment.uploadId));
      const decided = decideAppend({ session: session ?? null, segments: runs }, segment, now);
      if (typeof decided === 'string') return decided;
      await tx.insert(uploadSegments).values(segment);
      if (session!.state === 'Pending')
        await tx.update(uploadSessions).set({ state: 'Uploading' }).where(eq(uploadSessions.id, segment.uploadId));
      return decided;
    });
  }
}
