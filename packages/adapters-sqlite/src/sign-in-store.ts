import type Database from 'better-sqlite3';
import { eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  SIGN_IN_TICKETS_DROPPED,
  claimPasswordCheck,
  type AddressGuessState,
  type SourceFailureState,
  type CheckedBy,
  type PasswordCheckAdmission,
  type PasswordCheckClaim,
  type PasswordCheckFacts,
  type PasswordCheckWrites,
  type SignInThrottleStore,
  type SignInTicketRecord,
} from '@strongroom/core';
import { refundPasswordCheck } from '@strongroom/core/internal';
import {
  addressGuessFromJson,
  filterWhere,
  signInAddressCountKey,
  signInSourceCountKey,
  sourceFailuresFromJson,
} from '@strongroom/sql-common';
import { accounts } from './schema/accounts.js';
import { signInCounts, signInTickets } from './schema/sign-in.js';

/** The tickets storing `ticket` drops, by core's rule. */
const droppedBy = (ticket: SignInTicketRecord) =>
  filterWhere(SIGN_IN_TICKETS_DROPPED, { accountId: ticket.accountId, now: ticket.issuedAt }, (f) => signInTickets[f]);

const addressKey = signInAddressCountKey;
const sourceKey = signInSourceCountKey;
const addressOf = addressGuessFromJson;
const sourceOf = sourceFailuresFromJson;

/**
 * The password-guessing counts and sign-in tickets over SQLite. A claim or refund is one IMMEDIATE
 * transaction: it takes the write lock before reading, so another process's read-decide-write can
 * never interleave with it.
 */
export class SqliteSignInStore implements SignInThrottleStore {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async claimPasswordCheck(claim: PasswordCheckClaim): Promise<PasswordCheckAdmission> {
    return this.#apply(claim, (facts) => claimPasswordCheck(facts, claim));
  }

  async refundPasswordCheck(claim: PasswordCheckClaim, by: CheckedBy): Promise<void> {
    this.#apply(claim, (facts) => ({ admission: undefined, writes: refundPasswordCheck(facts, claim, by) }));
  }

  /** Reads the facts under the write lock, lets core decide, writes what it decided. */
  #apply<T>(
    claim: PasswordCheckClaim,
    decide: (facts: PasswordCheckFacts) => { admission: T; writes: PasswordCheckWrites },
  ): T {
    return this.#db.transaction(
      (tx) => {
        const count = (key: string) => tx.select().from(signInCounts).where(eq(signInCounts.key, key)).get();
        const address = count(addressKey(claim.addressKey));
        const source = count(sourceKey(claim.sourceKey));
        const ticket =
          claim.ticketHash === null
            ? undefined
            : tx
                .select({
                  record: signInTickets,
                  holder: accounts.id,
                  addressKey: accounts.addressKey,
                  credentialsChangedAt: accounts.credentialsChangedAt,
                  lockedAt: accounts.lockedAt,
                })
                .from(signInTickets)
                .leftJoin(accounts, eq(accounts.id, signInTickets.accountId))
                .where(eq(signInTickets.ticketHash, claim.ticketHash))
                .get();
        const facts: PasswordCheckFacts = {
          address: address ? addressOf(address.state) : null,
          source: source ? sourceOf(source.state) : null,
          ticket: ticket
            ? {
                record: ticket.record,
                account:
                  ticket.holder === null
                    ? null
                    : {
                        addressKey: ticket.addressKey,
                        credentialsChangedAt: ticket.credentialsChangedAt,
                        lockedAt: ticket.lockedAt,
                      },
              }
            : null,
        };
        const { admission, writes } = decide(facts);
        const put = (key: string, state: AddressGuessState | SourceFailureState) => {
          const json = JSON.stringify(state);
          tx.insert(signInCounts)
            .values({ key, state: json })
            .onConflictDoUpdate({ target: signInCounts.key, set: { state: json } })
            .run();
        };
        if (writes.address !== undefined) put(addressKey(claim.addressKey), writes.address);
        if (writes.source !== undefined) put(sourceKey(claim.sourceKey), writes.source);
        if (writes.ticketWrongPasswords !== undefined && claim.ticketHash !== null) {
          tx.update(signInTickets)
            .set({ wrongPasswords: writes.ticketWrongPasswords })
            .where(eq(signInTickets.ticketHash, claim.ticketHash))
            .run();
        }
        return admission;
      },
      { behavior: 'immediate' },
    );
  }

  async issueSignInTicket(ticket: SignInTicketRecord): Promise<void> {
    this.#db.transaction(
      (tx) => {
        tx.delete(signInTickets).where(droppedBy(ticket)).run();
        tx.insert(signInTickets).values(ticket).run();
      },
      { behavior: 'immediate' },
    );
  }

  async voidSignInTickets(accountId: string): Promise<number> {
    return this.#db.delete(signInTickets).where(eq(signInTickets.accountId, accountId)).run().changes;
  }

  async voidAllSignInTickets(): Promise<number> {
    return this.#db.delete(signInTickets).run().changes;
  }

  async findAddressGuesses(key: string): Promise<AddressGuessState | null> {
    const row = this.#db
      .select()
      .from(signInCounts)
      .where(eq(signInCounts.key, addressKey(key)))
      .get();
    return row ? addressOf(row.state) : null;
  }

  async findSourceFailures(key: string): Promise<SourceFailureState | null> {
    const row = this.#db
      .select()
      .from(signInCounts)
      .where(eq(signInCounts.key, sourceKey(key)))
      .get();
    return row ? sourceOf(row.state) : null;
  }

  async findSignInTicket(ticketHash: string): Promise<SignInTicketRecord | null> {
    return this.#db.select().from(signInTickets).where(eq(signInTickets.ticketHash, ticketHash)).get() ?? null;
  }
}
