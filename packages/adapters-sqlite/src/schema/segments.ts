import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { uploadSessions } from './quota.js';

/**
 * The runs of bytes a resumable (tus) upload received, one row per acknowledged PATCH: their
 * contiguous end is the session's durable offset. One run per start, so two appends at one offset
 * cannot both be kept even if a store let both read the same offset.
 */
export const uploadSegments = sqliteTable(
  'upload_segments',
  {
    uploadId: text('upload_id')
      .notNull()
      .references(() => uploadSessions.id, { onDelete: 'cascade' }),
    start: integer('start').notNull(),
    length: integer('length').notNull(),
    /** The blob store's staging id holding the run's bytes. */
    segmentId: text('segment_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.uploadId, t.start] })],
);
