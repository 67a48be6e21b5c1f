import { and, eq } from 'drizzle-orm';
import { filterWhere } from '@strongroom/sql-common';
import {
  OIDC_LAPSED,
  type AccountRecord,
  type IdentityLink,
  type IdentityLinkStore,
  type LoginCodeRecord,
  type OidcFlowRecord,
  type OidcFlowStore,
} from '@strongroom/core';
import type { PgDb } from './db.js';
import { createLedgerRows } from './quota-store.js';
import { accounts, identityLinks, oidcFlows, oidcLoginCodes } from './schema/index.js';

/** Thrown inside a transaction to roll it back with a known outcome. */
class Outcome extends Error {
  constructor(readonly value: 'address_taken' | 'link_taken') {
    super(value);
  }
}

/**
 * OpenID flows, login codes and identity links over PostgreSQL, mirroring SqliteOidcStore. Taking
 * a flow or a code is one `DELETE … RETURNING`: of two processes racing for one row, the second
 * waits for the first's row lock and then finds nothing, so every flow and code is taken once.
 */
export class PgOidcStore implements OidcFlowStore, IdentityLinkStore {
  constructor(readonly db: PgDb) {}

  async insertFlow(flow: OidcFlowRecord, now: number): Promise<void> {
    await this.db.delete(oidcFlows).where(filterWhere(OIDC_LAPSED, { now }, (f) => oidcFlows[f]));
    await this.db.delete(oidcLoginCodes).where(filterWhere(OIDC_LAPSED, { now }, (f) => oidcLoginCodes[f]));
    await this.db.insert(oidcFlows).values(flow);
  }
  async takeFlow(stateHash: string): Promise<OidcFlowRecord | null> {
    const [r] = await this.db.delete(oidcFlows).where(eq(oidcFlows.stateHash, stateHash)).returning();
    return r ?? null;
  }
  async insertLoginCode(code: LoginCodeRecord): Promise<void> {
    await this.db.insert(oidcLoginCodes).values(code);
  }
  async takeLoginCode(codeHash: string): Promise<LoginCodeRecord | null> {
    const [r] = await this.db.delete(oidcLoginCodes).where(eq(oidcLoginCodes.codeHash, codeHash)).returning();
    return r ?? null;
  }

  async findLink(issuer: string, subject: string): Promise<IdentityLink | null> {
    const [r] = await this.db
      .select()
      .from(identityLinks)
      .where(and(eq(identityLinks.issuer, issuer), eq(identityLinks.subject, subject)));
    return r ?? null;
  }
  async listLinks(accountId: string): Promise<IdentityLink[]> {
    return this.db
      .select()
      .from(identityLinks)
      .where(eq(identityLinks.accountId, accountId))
      .orderBy(identityLinks.createdAt);
  }
  async insertLink(link: IdentityLink): Promise<'linked' | 'exists' | 'taken'> {
    const inserted = await this.db
      .insert(identityLinks)
      .values(link)
      .onConflictDoNothing()
      .returning({ subject: identityLinks.subject });
    if (inserted.length === 1) return 'linked';
    const held = await this.findLink(link.issuer, link.subject);
    return held?.accountId === link.accountId ? 'exists' : 'taken';
  }
  async createLinkedAccount(
    account: AccountRecord,
    link: IdentityLink,
  ): Promise<'created' | 'address_taken' | 'link_taken'> {
    try {
      return await this.db.transaction(async (tx) => {
        const created = await tx
          .insert(accounts)
          .values(account)
          .onConflictDoNothing({ target: accounts.addressKey })
          .returning({ id: accounts.id });
        if (created.length !== 1) {
          // The address is held; if by this very identity's account (a first sign-in that won the
          // race, its row committed by now), that is link_taken, as the port says: the loser signs in.
          const [held] = await tx
            .select({ accountId: identityLinks.accountId })
            .from(identityLinks)
            .where(and(eq(identityLinks.issuer, link.issuer), eq(identityLinks.subject, link.subject)));
          throw new Outcome(held ? 'link_taken' : 'address_taken');
        }
        const linked = await tx
          .insert(identityLinks)
          .values(link)
          .onConflictDoNothing()
          .returning({ subject: identityLinks.subject });
        if (linked.length !== 1) throw new Outcome('link_taken');
        await createLedgerRows(tx, [account.id]);
        return 'created' as const;
      });
    } catch (e) {
      if (e instanceof Outcome) return e.value;
      throw e;
    }
  }
  async removeLinks(accountId: string, issuer: string): Promise<number> {
    const r = await this.db
      .delete(identityLinks)
      .where(and(eq(identityLinks.accountId, accountId), eq(identityLinks.issuer, issuer)))
      .returning({ subject: identityLinks.subject });
    return r.length;
  }
}
