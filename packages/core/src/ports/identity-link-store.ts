import type { AccountRecord } from './account-store.js';

/** An account's binding to a person at an OpenID provider: (issuer, subject) names one account. */
export interface IdentityLink {
  readonly issuer: string;
  readonly subject: string;
  readonly accountId: string;
  readonly createdAt: number;
}

/** Identity links. "Not found" is null. */
export interface IdentityLinkStore {
  findLink(issuer: string, subject: string): Promise<IdentityLink | null>;
  listLinks(accountId: string): Promise<IdentityLink[]>;
  /** Binds unless (issuer, subject) is bound already: 'exists' when to this account, 'taken' when to another. */
  insertLink(link: IdentityLink): Promise<'linked' | 'exists' | 'taken'>;
  /**
   * Atomically creates the account and its first link. Nothing is written when the address key is
   * held ('address_taken') or the identity is bound already ('link_taken'). When both hold,
   * 'link_taken': the identity decides whose account a sign-in reaches.
   */
  createLinkedAccount(account: AccountRecord, link: IdentityLink): Promise<'created' | 'address_taken' | 'link_taken'>;
  /** Removes the account's links at this issuer; returns how many there were. */
  removeLinks(accountId: string, issuer: string): Promise<number>;
}
