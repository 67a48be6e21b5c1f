import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { accounts } from './accounts.js';

/**
 * Password-guessing counts (core's sign-in-throttle): one row per key, `a:` and the hash of a
 * normalized address (core's addressCountKey; the state is AddressGuessState, its latest wrong
 * passwords and strikes), or `s:` and a client address key (SourceFailureState, its latest failed
 * sign-ins), as JSON with epoch milliseconds. No row, or `{}`: none recorded.
 */
export const signInCounts = sqliteTable('sign_in_counts', {
  key: text('key').primaryKey(),
  state: text('state').notNull(),
});

/** Sign-in tickets, by the SHA-256 of the ticket (the ticket itself is never stored). */
export const signInTickets = sqliteTable(
  'sign_in_tickets',
  {
    ticketHash: text('ticket_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    issuedAt: integer('issued_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** The account's credentials stamp the issuing sign-in was judged under (null: never changed). */
    credentialsAt: integer('credentials_at'),
    wrongPasswords: integer('wrong_passwords').notNull(),
  },
  (t) => [index('sign_in_tickets_account').on(t.accountId)],
);
