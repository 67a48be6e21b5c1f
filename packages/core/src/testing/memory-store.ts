import type { AccountRecord, AccountStore, PasswordChange } from '../ports/account-store.js';
import type { CohortMap, CohortRecord } from '../ports/cohort-map.js';
import type { SessionAccess, SessionLedger, SessionRecord } from '../ports/session-ledger.js';
import type { SigningKeyRecord, SigningKeyStore } from '../ports/signing-key-store.js';
import { closedByCredentialChange, closedByPasswordChange } from '../account/credential-change.js';
import { cohortSighting } from '../cohort/sighting.js';

/**
 * The in-memory reference implementation of the store ports. It is what the contract suite is
 * written against first, and what pure-core tests use.
 */
export class MemoryStore implements AccountStore, SessionLedger, CohortMap, SigningKeyStore {
  readonly accounts = new Map<string, AccountRecord>();
  readonly sessions = new Map<string, SessionRecord>();
  readonly cohorts = new Map<string, Map<string, CohortRecord>>();
  signingKeys: SigningKeyRecord[] = [];

  async createAccount(account: AccountRecord): Promise<'created' | 'address_taken'> {
    if (account.addressKey !== null)
      for (const a of this.accounts.values()) if (a.addressKey === account.addressKey) return 'address_taken';
    this.accounts.set(account.id, account);
    return 'created';
  }
  async findAccountByAddress(addressKey: string): Promise<AccountRecord | null> {
    for (const a of this.accounts.values()) if (a.addressKey === addressKey) return a;
    return null;
  }
  async findAccountById(id: string): Promise<AccountRecord | null> {
    return this.accounts.get(id) ?? null;
  }
  async setDisplayName(id: string, displayName: string | null): Promise<AccountRecord | null> {
    const a = this.accounts.get(id);
    if (!a) return null;
    const next = { ...a, displayName };
    this.accounts.set(id, next);
    return next;
  }
  async setLocked(id: string, lockedAt: number | null): Promise<boolean> {
    const a = this.accounts.get(id);
    if (!a) return false;
    this.accounts.set(id, { ...a, lockedAt, ...(lockedAt === null ? {} : { credentialsChangedAt: lockedAt }) });
    return true;
  }
  async changePassword(change: PasswordChange): Promise<boolean> {
    const a = this.accounts.get(change.accountId);
    const s = this.sessions.get(change.sessionId);
    if (!a || !s || s.accountId !== change.accountId || s.closedAt !== null) return false;
    if ((a.credentialsChangedAt ?? null) !== change.credentialsChangedAt) return false;
    this.accounts.set(a.id, { ...a, passwordHash: change.passwordHash, credentialsChangedAt: change.at });
    for (const other of this.sessions.values()) {
      if (closedByPasswordChange(other, change)) this.sessions.set(other.id, { ...other, closedAt: change.at });
    }
    // Past every access token issued to the session so far (a refresh that recorded its issuance
    // just before the change, at an instant after `at`, is refused too).
    this.sessions.set(s.id, {
      ...s,
      tokenHash: change.tokenHash,
      accessFloor: Math.max(change.at, s.refreshedAt + 1),
      authenticatedAt: change.at,
    });
    return true;
  }

  /** The claimed handle's user part, as the SQL stores join it; createMemoryPorts wires it to the discovery store. */
  handleUserOf: (accountId: string) => string | null = () => null;

  async openSession(session: SessionRecord, credentialsChangedAt: number | null): Promise<boolean> {
    const a = this.accounts.get(session.accountId);
    if (!a || a.credentialsChangedAt !== credentialsChangedAt) return false;
    this.sessions.set(session.id, { ...session, method: session.method ?? 'password' });
    return true;
  }
  async findSessionById(id: string): Promise<SessionRecord | null> {
    return this.sessions.get(id) ?? null;
  }
  async findSessionAccess(id: string): Promise<SessionAccess | null> {
    const s = this.sessions.get(id);
    const a = s && this.accounts.get(s.accountId);
    if (!s || !a) return null;
    return {
      accountId: s.accountId,
      accessFloor: s.accessFloor,
      closedAt: s.closedAt,
      lastUsedAt: s.lastUsedAt,
      account: {
        id: a.id,
        address: a.address,
        displayName: a.displayName,
        createdAt: a.createdAt,
        handleUser: this.handleUserOf(a.id),
      },
    };
  }
  async findSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null> {
    for (const s of this.sessions.values()) if (s.tokenHash === tokenHash) return s;
    return null;
  }
  async recordIssuance(id: string, tokenHash: string, at: number, staleBefore: number): Promise<boolean> {
    const s = this.sessions.get(id);
    if (!s || s.closedAt !== null || s.tokenHash !== tokenHash) return false;
    this.sessions.set(id, {
      ...s,
      refreshedAt: Math.max(s.refreshedAt, at),
      lastUsedAt: s.lastUsedAt <= staleBefore ? Math.max(s.lastUsedAt, at) : s.lastUsedAt,
    });
    return true;
  }
  async touchSession(id: string, at: number, staleBefore: number): Promise<void> {
    const s = this.sessions.get(id);
    if (s && s.lastUsedAt <= staleBefore) this.sessions.set(id, { ...s, lastUsedAt: at });
  }
  async closeSession(accountId: string, id: string, at: number): Promise<boolean> {
    const s = this.sessions.get(id);
    if (!s || s.accountId !== accountId || s.closedAt !== null) return false;
    this.sessions.set(id, { ...s, closedAt: at });
    return true;
  }
  async closeAllSessions(accountId: string, at: number): Promise<number> {
    const a = this.accounts.get(accountId);
    if (a) this.accounts.set(accountId, { ...a, credentialsChangedAt: at });
    let n = 0;
    for (const s of this.sessions.values()) {
      if (closedByCredentialChange(s, accountId)) {
        this.sessions.set(s.id, { ...s, closedAt: at });
        n++;
      }
    }
    return n;
  }
  async recordAuthentication(id: string, at: number): Promise<boolean> {
    const s = this.sessions.get(id);
    if (!s || s.closedAt !== null) return false;
    this.sessions.set(id, { ...s, authenticatedAt: at });
    return true;
  }
  async listOpenSessions(accountId: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()].filter((s) => s.accountId === accountId && s.closedAt === null);
  }

  async recordCohort(accountId: string, cohortHash: string, at: number): Promise<void> {
    const map = this.cohorts.get(accountId) ?? new Map<string, CohortRecord>();
    const prev = map.get(cohortHash);
    map.set(cohortHash, cohortSighting(prev ?? null, cohortHash, at));
    this.cohorts.set(accountId, map);
  }
  async listCohorts(accountId: string): Promise<CohortRecord[]> {
    return [...(this.cohorts.get(accountId)?.values() ?? [])].sort((a, b) => a.firstSeen - b.firstSeen);
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return [...this.signingKeys];
  }
  async rotateSigningKey(next: SigningKeyRecord, at: number): Promise<void> {
    this.signingKeys = this.signingKeys.map((k) => (k.retiredAt === null ? { ...k, retiredAt: at } : k));
    this.signingKeys.push(next);
  }
  async ensureSigningKey(first: SigningKeyRecord): Promise<SigningKeyRecord[]> {
    if (this.signingKeys.length === 0) this.signingKeys.push(first);
    return [...this.signingKeys];
  }
  async resealSigningKey(kid: string, from: string, to: string): Promise<boolean> {
    const i = this.signingKeys.findIndex((k) => k.kid === kid && k.privateKey === from);
    if (i < 0) return false;
    this.signingKeys[i] = { ...this.signingKeys[i]!, privateKey: to };
    return true;
  }
}
