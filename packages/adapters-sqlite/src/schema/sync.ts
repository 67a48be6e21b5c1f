import { integer, primaryKey, sqliteTable, text, uniqueIndex, index } from 'drizzle-orm/sqlite-core';

/**
 * Each account's sync sequence: `seq` is the last number handed out, taken and raised in the
 * transaction of every write that records a change, so the account's numbers commit in order.
 * `pruned_through` is the highest number of a tombstone pruned from its log (core's cursorExpired).
 */
export const syncHeads = sqliteTable('sync_heads', {
  accountId: text('account_id').primaryKey(),
  seq: integer('seq').notNull().default(0),
  prunedThrough: integer('pruned_through').notNull().default(0),
});

/**
 * The latest change of each object of an account (one row per object, replaced by its next
 * change). A page is one range of (account_id, seq).
 */
export const syncChanges = sqliteTable(
  'sync_changes',
  {
    accountId: text('account_id').notNull(),
    kind: text('kind', { enum: ['album', 'asset', 'link'] }).notNull(),
    objectId: text('object_id').notNull(),
    op: text('op', { enum: ['upsert', 'remove'] }).notNull(),
    seq: integer('seq').notNull(),
    at: integer('at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.kind, t.objectId] }),
    uniqueIndex('sync_changes_seq_idx').on(t.accountId, t.seq),
    // Every column a page reads, after the range's key: a page is read from this index alone,
    // without a lookup of each entry's row in the table.
    index('sync_changes_page_idx').on(t.accountId, t.seq, t.kind, t.objectId, t.op, t.at),
  ],
);
