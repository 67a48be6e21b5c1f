import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { accounts } from './accounts.js';

// OpenID Connect sign-in. Flows and login codes are keyed on the SHA-256 of their secret; each row
// is deleted when it is taken (single use), and expired ones are purged when a new flow starts.

export const oidcFlows = sqliteTable(
  'oidc_flows',
  {
    stateHash: text('state_hash').primaryKey(),
    purpose: text('purpose', { enum: ['sign_in', 'link', 'reauthenticate'] }).notNull(),
    initiator: text('initiator').references(() => accounts.id),
    returnTo: text('return_to').notNull(),
    appChallenge: text('app_challenge'),
    sealedVerifier: text('sealed_verifier').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('oidc_flows_expires_idx').on(t.expiresAt)],
);

export const oidcLoginCodes = sqliteTable(
  'oidc_login_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    purpose: text('purpose', { enum: ['sign_in', 'link', 'reauthenticate'] }).notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    appChallenge: text('app_challenge'),
    issuer: text('issuer'),
    subject: text('subject'),
    authenticatedAt: integer('authenticated_at').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('oidc_login_codes_expires_idx').on(t.expiresAt)],
);

export const identityLinks = sqliteTable(
  'identity_links',
  {
    issuer: text('issuer').notNull(),
    subject: text('subject').notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index('identity_links_account_idx').on(t.accountId)],
);
