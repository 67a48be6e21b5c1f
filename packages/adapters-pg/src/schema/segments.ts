import { bigint, primaryKey, pgTable, text } from 'drizzle-orm/pg-core';
import { uploadSessions } from './quota.js';

/**
 * The runs of bytes a resumable (tus) upload received, one row per acknowledged PATCH: their
 * contiguous end is the session's durable offset. One run per start, so two appends at one offset
 * cannot both be kept even if a store let both read the same offset.
 */
export const uploadSegments = pgTable(
  'upload_segments',
  {
    uploadId: text('upload_id')
      .notNull()
      .references(() => uploadSessions.id, { onDelete: 'cascade' }),
    start: bigint('start', { mode: 'number' }).notNull(),
    length: bigint('length', { mode: 'number' }).notNull(),
    /** The blob store's staging id holding the run's bytes. */
    segmentId: text('segment_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.uploadId, t.start] })],
);
