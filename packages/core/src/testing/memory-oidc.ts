import type { AccountRecord } from '../ports/account-store.js';
import type { IdentityLink, IdentityLinkStore } from '../ports/identity-link-store.js';
import type { LoginCodeRecord, OidcFlowRecord, OidcFlowStore } from '../ports/oidc-flow-store.js';
import { holds } from '../filters/filter.js';
import { OIDC_LAPSED } from '../oidc/rules.js';
import type { MemoryStore } from './memory-store.js';

/** OpenID flows, login codes and identity links in memory, beside the accounts they create. */
export class MemoryOidcStore implements OidcFlowStore, IdentityLinkStore {
  readonly flows = new Map<string, OidcFlowRecord>();
  readonly codes = new Map<string, LoginCodeRecord>();
  readonly links = new Map<string, IdentityLink>();

  constructor(readonly accounts: MemoryStore) {}

  async insertFlow(flow: OidcFlowRecord, now: number): Promise<void> {
    for (const [k, f] of this.flows) if (holds(OIDC_LAPSED, f, { now })) this.flows.delete(k);
    for (const [k, c] of this.codes) if (holds(OIDC_LAPSED, c, { now })) this.codes.delete(k);
    this.flows.set(flow.stateHash, flow);
  }
  async takeFlow(stateHash: string): Promise<OidcFlowRecord | null> {
    const f = this.flows.get(stateHash) ?? null;
    this.flows.delete(stateHash);
    return f;
  }
  async insertLoginCode(code: LoginCodeRecord): Promise<void> {
    this.codes.set(code.codeHash, code);
  }
  async takeLoginCode(codeHash: string): Promise<LoginCodeRecord | null> {
    const c = this.codes.get(codeHash) ?? null;
    this.codes.delete(codeHash);
    return c;
  }

  async findLink(issuer: string, subject: string): Promise<IdentityLink | null> {
    return this.links.get(key(issuer, subject)) ?? null;
  }
  async listLinks(accountId: string): Promise<IdentityLink[]> {
    return [...this.links.values()].filter((l) => l.accountId === accountId).sort((a, b) => a.createdAt - b.createdAt);
  }
  async insertLink(link: IdentityLink): Promise<'linked' | 'exists' | 'taken'> {
    const held = this.links.get(key(link.issuer, link.subject));
    if (held) return held.accountId === link.accountId ? 'exists' : 'taken';
    this.links.set(key(link.issuer, link.subject), link);
    return 'linked';
  }
  async createLinkedAccount(
    account: AccountRecord,
    link: IdentityLink,
  ): Promise<'created' | 'address_taken' | 'link_taken'> {
    // Checked and written with no await in between: one step, as a transaction would be.
    if (this.links.has(key(link.issuer, link.subject))) return 'link_taken';
    if (
      account.addressKey !== null &&
      [...this.accounts.accounts.values()].some((a) => a.addressKey === account.addressKey)
    )
      return 'address_taken';
    this.accounts.accounts.set(account.id, account);
    this.links.set(key(link.issuer, link.subject), link);
    return 'created';
  }
  async removeLinks(accountId: string, issuer: string): Promise<number> {
    let n = 0;
    for (const [k, l] of this.links) {
      if (l.accountId === accountId && l.issuer === issuer) {
        this.links.delete(k);
        n++;
      }
    }
    return n;
  }
}

const key = (issuer: string, subject: string): string => JSON.stringify([issuer, subject]);
