import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import { holds, type RowFilter } from '../filters/filter.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { Random } from '../ports/random.js';
import type {
  RevokeAllAdmission,
  RevokeAllChallenge,
  RevokeAllChallengeStore,
} from '../ports/revoke-all-challenges.js';
import { verifyEd25519 } from '../proofs/signatures.js';

export const LOGOUT_ALL_DOMAIN = 'svc-logout-all/v1';
export const REVOKE_ALL_CHALLENGE_TTL_S = 300;
/** At most this many live revoke-all challenges per account: nobody can pile them up. */
export const MAX_LIVE_REVOKE_ALL_CHALLENGES = 5;

/**
 * A challenge lapses at its expiry (parameter `now`): redeem refuses it, it no longer counts toward
 * the bound, and a store drops it when the next challenge is stored.
 */
export const REVOKE_ALL_CHALLENGE_LAPSED: RowFilter<'expiresAt'> = [{ op: '<=', field: 'expiresAt', param: 'now' }];

export function revokeAllChallengeLapsed(challenge: Pick<RevokeAllChallenge, 'expiresAt'>, now: number): boolean {
  return holds(REVOKE_ALL_CHALLENGE_LAPSED, challenge, { now });
}

/** May one more challenge be stored, given the expiries of the account's stored ones? */
export function admitRevokeAllChallenge(expiries: readonly number[], now: number): RevokeAllAdmission {
  const live = expiries.filter((expiresAt) => !revokeAllChallengeLapsed({ expiresAt }, now)).sort((a, b) => a - b);
  if (live.length < MAX_LIVE_REVOKE_ALL_CHALLENGES) return { admitted: true };
  // The earliest slot frees when enough of the oldest have expired to drop below the bound.
  const frees = live[live.length - MAX_LIVE_REVOKE_ALL_CHALLENGES]!;
  return { admitted: false, retryAfterS: Math.max(1, Math.ceil((frees - now) / 1000)) };
}

/** The bytes the identity anchor signs to close every session of the account. */
export function logoutAllMessage(accountId: string, challenge: Uint8Array): Uint8Array {
  return canonicalCbor([LOGOUT_ALL_DOMAIN, accountId, challenge]);
}

export interface RevokeAllServiceDeps {
  readonly challenges: RevokeAllChallengeStore;
  readonly directories: DeviceDirectoryStore;
  /** SessionService provides this. */
  readonly sessions: { closeAll(accountId: string): Promise<number> };
  readonly clock: Clock;
  readonly random: Random;
}

/**
 * Revoke-all (spec §7.7, §7.8): a session asks for a challenge; anyone holding the identity key's
 * signature over it redeems it without a session. Every failure is the same refusal, and the
 * challenge is consumed before anything is judged, so it burns on every attempt.
 */
export class RevokeAllService {
  readonly #d: RevokeAllServiceDeps;

  constructor(deps: RevokeAllServiceDeps) {
    this.#d = deps;
  }

  async issueChallenge(
    accountId: string,
  ): Promise<Result<{ challenge: string; expiresIn: number }, 'error.request.too_many'>> {
    const now = this.#d.clock.now();
    const bytes = this.#d.random.bytes(32);
    const record = { challengeHash: sha256Hex(bytes), accountId, expiresAt: now + REVOKE_ALL_CHALLENGE_TTL_S * 1000 };
    const admission = await guard('error.store.unavailable', 'storing a revoke-all challenge', () =>
      this.#d.challenges.insertRevokeAllChallenge(record, now, (expiries) => admitRevokeAllChallenge(expiries, now)),
    );
    if (!admission.admitted) {
      return refuse(
        'error.request.too_many',
        `At most ${MAX_LIVE_REVOKE_ALL_CHALLENGES} revoke-all challenges may be live at once.`,
        { retry_after_s: admission.retryAfterS },
      );
    }
    return ok({ challenge: toBase64url(bytes), expiresIn: REVOKE_ALL_CHALLENGE_TTL_S });
  }

  /** Verifies the proof against the anchor only, then closes every session of the account. */
  async redeem(input: {
    challenge: string;
    signature: string;
  }): Promise<Result<{ sessionsClosed: number }, 'error.auth.proof_invalid'>> {
    const invalid = refuse('error.auth.proof_invalid', 'The proof is not valid.');
    const challenge = fromBase64url(input.challenge);
    if (challenge === null || challenge.length !== 32) return invalid;
    const now = this.#d.clock.now();
    const record = await guard('error.store.unavailable', 'consuming a revoke-all challenge', () =>
      this.#d.challenges.consumeRevokeAllChallenge(sha256Hex(challenge)),
    );
    if (record === null || revokeAllChallengeLapsed(record, now)) return invalid;
    const signature = fromBase64url(input.signature);
    if (signature === null) return invalid;
    const anchor = await guard('error.store.unavailable', 'reading the identity anchor', () =>
      this.#d.directories.findIdentityAnchor(record.accountId),
    );
    if (anchor === null || !verifyEd25519(anchor, logoutAllMessage(record.accountId, challenge), signature))
      return invalid;
    const sessionsClosed = await this.#d.sessions.closeAll(record.accountId);
    return ok({ sessionsClosed });
  }
}
