import { bigint, primaryKey, pgTable, text, uniqueIndex, index } from 'drizzle-orm/pg-core';

const n = (name: string) => bigint(name, { mode: 'number' });

/**
 * Each account's sync sequence: `seq` is the last number handed out, taken and raised in the
 * transaction of every write that records a change, so the account's numbers commit in order.
 * `pruned_through` is the highest number of a tombstone pruned from its log (core's cursorExpired).
 */
export const syncHeads = pgTable('sync_heads', {
  accountId: text('account_id').primaryKey(),
  seq: n('seq').notNull().default(0),
  prunedThrough: n('pruned_through').notNull().default(0),
});

/**
 * The latest change of each object of an account (one row per object, replaced by its next
 * change). A page is one range of (account_id, seq).
 */
export const syncChanges = pgTable(
  'sync_changes',
  {
    accountId: text('account_id').notNull(),
    kind: text('kind').$type<'album' | 'asset' | 'link'>().notNull(),
    objectId: text('object_id').notNull(),
    op: text('op').$type<'upsert' | 'remove'>().notNull(),
    seq: n('seq').notNull(),
    at: n('at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.kind, t.objectId] }),
    uniqueIndex('sync_changes_seq_idx').on(t.accountId, t.seq),
    // Every column a page reads, after the range's key: a page is read from this index alone,
    // without a lookup of each entry's row in the table.
    index('sync_changes_page_idx').on(t.accountId, t.seq, t.kind, t.objectId, t.op, t.at),
  ],
);
