import type Database from 'better-sqlite3';
import { and, eq } from 'drizzle-orm';
import { filterWhere } from '@strongroom/sql-common';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  OIDC_LAPSED,
  type AccountRecord,
  type IdentityLink,
  type IdentityLinkStore,
  type LoginCodeRecord,
  type OidcFlowRecord,
  type OidcFlowStore,
} from '@strongroom/core';
import * as schema from './schema/index.js';
import { accounts, identityLinks, oidcFlows, oidcLoginCodes } from './schema/index.js';

/**
 * OpenID flows, login codes and identity links over SQLite. Taking a flow or a code is one
 * `DELETE … RETURNING`: the row is gone in the statement that reads it, so it is taken once.
 */
export class SqliteOidcStore implements OidcFlowStore, IdentityLinkStore {
  readonly db: BetterSQLite3Database<typeof schema>;

  constructor(sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  async insertFlow(flow: OidcFlowRecord, now: number): Promise<void> {
    this.db.transaction(
      (tx) => {
        tx.delete(oidcFlows)
          .where(filterWhere(OIDC_LAPSED, { now }, (f) => oidcFlows[f]))
          .run();
        tx.delete(oidcLoginCodes)
          .where(filterWhere(OIDC_LAPSED, { now }, (f) => oidcLoginCodes[f]))
          .run();
        tx.insert(oidcFlows).values(flow).run();
      },
      { behavior: 'immediate' },
    );
  }
  async takeFlow(stateHash: string): Promise<OidcFlowRecord | null> {
    return this.db.delete(oidcFlows).where(eq(oidcFlows.stateHash, stateHash)).returning().get() ?? null;
  }
  async insertLoginCode(code: LoginCodeRecord): Promise<void> {
    this.db.insert(oidcLoginCodes).values(code).run();
  }
  async takeLoginCode(codeHash: string): Promise<LoginCodeRecord | null> {
    return this.db.delete(oidcLoginCodes).where(eq(oidcLoginCodes.codeHash, codeHash)).returning().get() ?? null;
  }

  async findLink(issuer: string, subject: string): Promise<IdentityLink | null> {
    return (
      this.db
        .select()
        .from(identityLinks)
        .where(and(eq(identityLinks.issuer, issuer), eq(identityLinks.subject, subject)))
        .get() ?? null
    );
  }
  async listLinks(accountId: string): Promise<IdentityLink[]> {
    return this.db
      .select()
      .from(identityLinks)
      .where(eq(identityLinks.accountId, accountId))
      .orderBy(identityLinks.createdAt)
      .all();
  }
  async insertLink(link: IdentityLink): Promise<'linked' | 'exists' | 'taken'> {
    return this.db.transaction(
      (tx) => {
        const held = tx
          .select()
          .from(identityLinks)
          .where(and(eq(identityLinks.issuer, link.issuer), eq(identityLinks.subject, link.subject)))
          .get();
        if (held) return held.accountId === link.accountId ? 'exists' : 'taken';
        tx.insert(identityLinks).values(link).run();
        return 'linked';
      },
      { behavior: 'immediate' },
    );
  }
  async createLinkedAccount(
    account: AccountRecord,
    link: IdentityLink,
  ): Promise<'created' | 'address_taken' | 'link_taken'> {
    return this.db.transaction(
      (tx) => {
        const held = tx
          .select()
          .from(identityLinks)
          .where(and(eq(identityLinks.issuer, link.issuer), eq(identityLinks.subject, link.subject)))
          .get();
        if (held) return 'link_taken';
        const created = tx.insert(accounts).values(account).onConflictDoNothing({ target: accounts.addressKey }).run();
        if (created.changes !== 1) return 'address_taken';
        tx.insert(identityLinks).values(link).run();
        return 'created';
      },
      { behavior: 'immediate' },
    );
  }
  async removeLinks(accountId: string, issuer: string): Promise<number> {
    return this.db
      .delete(identityLinks)
      .where(and(eq(identityLinks.accountId, accountId), eq(identityLinks.issuer, issuer)))
      .run().changes;
  }
}
