import { createHash } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
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
import type { PgDb } from './db.js';
import { accounts } from './schema/accounts.js';
import { signInCounts, signInTickets } from './schema/sign-in.js';

const addressKey = signInAddressCountKey;
const sourceKey = signInSourceCountKey;
const addressOf = addressGuessFromJson;
const sourceOf = sourceFailuresFromJson;

/** The advisory lock class of the count keys ('Sign'); each key's lock is (class, a 32-bit hash of the key). */
const COUNT_LOCK_CLASS = 0x5369676e;
const lockIdOf = (key: string): number => createHash('sha256').update(key).digest().readInt32BE(0);

/**
 * The password-guessing counts and sign-in tickets over PostgreSQL, mirroring the SQLite store. A
 * claim takes a transaction-scoped advisory lock per count key (the address's and the source's, in
 * ascending lock id, so two claims never wait on each other in a cycle), then reads, lets core
 * decide and writes (an upsert): concurrent claims from any number of processes queue on those
 * locks and each applies core's rule to what the previous one committed. Locks rather than rows
 * locked FOR UPDATE, because a row would have to be made to exist first: an attempt that is refused
 * and writes nothing must leave nothing behind, or a flood of made-up addresses fills the table.
 * The presented ticket's row, which exists, is locked FOR UPDATE after them.
 */
export class PgSignInStore implements SignInThrottleStore {
  constructor(readonly db: PgDb) {}

  async claimPasswordCheck(claim: PasswordCheckClaim): Promise<PasswordCheckAdmission> {
    return this.#apply(claim, (facts) => claimPasswordCheck(facts, claim));
  }

  async refundPasswordCheck(claim: PasswordCheckClaim, by: CheckedBy): Promise<void> {
    await this.#apply(claim, (facts) => ({ admission: undefined, writes: refundPasswordCheck(facts, claim, by) }));
  }

  async #apply<T>(
    claim: PasswordCheckClaim,
    decide: (facts: PasswordCheckFacts) => { admission: T; writes: PasswordCheckWrites },
  ): Promise<T> {
    const aKey = addressKey(claim.addressKey);
    const sKey = sourceKey(claim.sourceKey);
    return this.db.transaction(async (tx) => {
      for (const id of [...new Set([lockIdOf(aKey), lockIdOf(sKey)])].sort((x, y) => x - y)) {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${COUNT_LOCK_CLASS}, ${id})`);
      }
      const [address] = await tx.select().from(signInCounts).where(eq(signInCounts.key, aKey));
      const [source] = await tx.select().from(signInCounts).where(eq(signInCounts.key, sKey));
      const [ticket] =
        claim.ticketHash === null
          ? []
          : await tx
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
              .for('update', { of: signInTickets });
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
      const put = async (key: string, state: AddressGuessState | SourceFailureState) => {
        const json = JSON.stringify(state);
        await tx
          .insert(signInCounts)
          .values({ key, state: json })
          .onConflictDoUpdate({ target: signInCounts.key, set: { state: json } });
      };
      if (writes.address !== undefined) await put(aKey, writes.address);
      if (writes.source !== undefined) await put(sKey, writes.source);
      if (writes.ticketWrongPasswords !== undefined && claim.ticketHash !== null) {
        await tx
          .update(signInTickets)
          .set({ wrongPasswords: writes.ticketWrongPasswords })
          .where(eq(signInTickets.ticketHash, claim.ticketHash));
      }
      return admission;
    });
  }

  async issueSignInTicket(ticket: SignInTicketRecord): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx
        .delete(signInTickets)
        .where(
          filterWhere(
            SIGN_IN_TICKETS_DROPPED,
            { accountId: ticket.accountId, now: ticket.issuedAt },
            (f) => signInTickets[f],
          ),
        );
      await tx.insert(signInTickets).values(ticket);
    });
  }

  async voidSignInTickets(accountId: string): Promise<number> {
    return (
      await this.db
        .delete(signInTickets)
        .where(eq(signInTickets.accountId, accountId))
        .returning({ h: signInTickets.ticketHash })
    ).length;
  }

  async voidAllSignInTickets(): Promise<number> {
    return (await this.db.delete(signInTickets).returning({ h: signInTickets.ticketHash })).length;
  }

  async findAddressGuesses(key: string): Promise<AddressGuessState | null> {
    const [row] = await this.db
      .select()
      .from(signInCounts)
      .where(eq(signInCounts.key, addressKey(key)));
    return row ? addressOf(row.state) : null;
  }

  async findSourceFailures(key: string): Promise<SourceFailureState | null> {
    const [row] = await this.db
      .select()
      .from(signInCounts)
      .where(eq(signInCounts.key, sourceKey(key)));
    return row ? sourceOf(row.state) : null;
  }

  async findSignInTicket(ticketHash: string): Promise<SignInTicketRecord | null> {
    const [row] = await this.db.select().from(signInTickets).where(eq(signInTickets.ticketHash, ticketHash));
    return row ?? null;
  }
}
