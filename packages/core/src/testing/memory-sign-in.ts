import type { SignInThrottleStore } from '../ports/sign-in-throttle.js';
import {
  addressCountKey,
  claimPasswordCheck,
  droppedByIssuance,
  refundPasswordCheck,
  type AddressGuessState,
  type CheckedBy,
  type PasswordCheckAdmission,
  type PasswordCheckClaim,
  type PasswordCheckFacts,
  type PasswordCheckWrites,
  type SignInTicketRecord,
  type SourceFailureState,
} from '../sign-in-throttle/rules.js';
import type { MemoryStore } from './memory-store.js';

/**
 * The in-memory reference for the password-guessing counts and sign-in tickets. It reads the
 * ticket's account from the memory account store it is built over, as the SQL stores join the
 * accounts table; each method runs without awaiting, so it is atomic.
 */
export class MemorySignInStore implements SignInThrottleStore {
  /** By core's addressCountKey, as the SQL stores keep them. */
  readonly addresses = new Map<string, AddressGuessState>();
  readonly sources = new Map<string, SourceFailureState>();
  readonly tickets = new Map<string, SignInTicketRecord>();

  constructor(readonly ledger: MemoryStore) {}

  #facts(claim: PasswordCheckClaim): PasswordCheckFacts {
    const record = claim.ticketHash === null ? undefined : this.tickets.get(claim.ticketHash);
    const account = record === undefined ? undefined : this.ledger.accounts.get(record.accountId);
    return {
      address: this.addresses.get(addressCountKey(claim.addressKey)) ?? null,
      source: this.sources.get(claim.sourceKey) ?? null,
      ticket:
        record === undefined
          ? null
          : {
              record,
              account:
                account === undefined
                  ? null
                  : {
                      addressKey: account.addressKey,
                      credentialsChangedAt: account.credentialsChangedAt ?? null,
                      lockedAt: account.lockedAt,
                    },
            },
    };
  }

  #write(claim: PasswordCheckClaim, writes: PasswordCheckWrites): void {
    if (writes.address !== undefined) this.addresses.set(addressCountKey(claim.addressKey), writes.address);
    if (writes.source !== undefined) this.sources.set(claim.sourceKey, writes.source);
    if (writes.ticketWrongPasswords !== undefined && claim.ticketHash !== null) {
      const t = this.tickets.get(claim.ticketHash);
      if (t !== undefined) this.tickets.set(claim.ticketHash, { ...t, wrongPasswords: writes.ticketWrongPasswords });
    }
  }

  async claimPasswordCheck(claim: PasswordCheckClaim): Promise<PasswordCheckAdmission> {
    const { admission, writes } = claimPasswordCheck(this.#facts(claim), claim);
    this.#write(claim, writes);
    return admission;
  }

  async refundPasswordCheck(claim: PasswordCheckClaim, by: CheckedBy): Promise<void> {
    this.#write(claim, refundPasswordCheck(this.#facts(claim), claim, by));
  }

  async issueSignInTicket(ticket: SignInTicketRecord): Promise<void> {
    for (const [hash, t] of this.tickets) if (droppedByIssuance(t, ticket)) this.tickets.delete(hash);
    this.tickets.set(ticket.ticketHash, ticket);
  }

  async voidSignInTickets(accountId: string): Promise<number> {
    let n = 0;
    for (const [hash, t] of this.tickets) if (t.accountId === accountId && this.tickets.delete(hash)) n++;
    return n;
  }

  async voidAllSignInTickets(): Promise<number> {
    const n = this.tickets.size;
    this.tickets.clear();
    return n;
  }

  async findAddressGuesses(addressKey: string): Promise<AddressGuessState | null> {
    return this.addresses.get(addressCountKey(addressKey)) ?? null;
  }

  async findSourceFailures(sourceKey: string): Promise<SourceFailureState | null> {
    return this.sources.get(sourceKey) ?? null;
  }

  async findSignInTicket(ticketHash: string): Promise<SignInTicketRecord | null> {
    return this.tickets.get(ticketHash) ?? null;
  }
}
