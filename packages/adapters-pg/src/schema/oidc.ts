import { bigint, index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

// Mirrors adapters-sqlite/src/schema/oidc.ts column for column.
const ms = (name: string) => bigint(name, { mode: 'number' });

// OpenID Connect sign-in. Flows and login codes are keyed on the SHA-256 of their secret; each row
// is deleted when it is taken (single use), and expired ones are purged when a new flow starts.

export const oidcFlows = pgTable(
  'oidc_flows',
  {
    stateHash: text('state_hash').primaryKey(),
    purpose: text('purpose', { enum: ['sign_in', 'link', 'reauthenticate'] }).notNull(),
    initiator: text('initiator').references(() => accounts.id),
    returnTo: text('return_to').notNull(),
    appChallenge: text('app_challenge'),
    sealedVerifier: text('sealed_verifier').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [index('oidc_flows_expires_idx').on(t.expiresAt)],
);

export const oidcLoginCodes = pgTable(
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
    authenticatedAt: ms('authenticated_at').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [index('oidc_login_codes_expires_idx').on(t.expiresAt)],
);

export const identityLinks = pgTable(
  'identity_links',
  {
    issuer: text('issuer').notNull(),
    subject: text('subject').notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index('identity_links_account_idx').on(t.accountId)],
);
