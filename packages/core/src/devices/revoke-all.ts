import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { Random } from '../ports/random.js';
import type { RevokeAllChallengeStore } from '../ports/revoke-all-challenges.js';
import { verifyEd25519 } from '../proofs/signatures.js';

export const LOGOUT_ALL_DOMAIN = 'svc-logout-all/v1';
export const REVOKE_ALL_CHALLENGE_TTL_S = 300;

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
 * Revoke-all (contract 5.10): a session asks for a challenge; anyone holding the identity key's
 * signature over it redeems it without a session. Every failure is the same refusal, and the
 * challenge is consumed before anything is judged, so it burns on every attempt.
 */
export class RevokeAllService {
  readonly #d: RevokeAllServiceDeps;

  constructor(deps: RevokeAllServiceDeps) {
    this.#d = deps;
  }

  async issueChallenge(accountId: string): Promise<{ challenge: string; expiresIn: number }> {
    const now = this.#d.clock.now();
    const bytes = this.#d.random.bytes(32);
    const record = { challengeHash: sha256Hex(bytes), accountId, expiresAt: now + REVOKE_ALL_CHALLENGE_TTL_S * 1000 };
    await guard('error.store.unavailable', 'storing a revoke-all challenge', () => this.#d.challenges.insertRevokeAllChallenge(record, now));
    return { challenge: toBase64url(bytes), expiresIn: REVOKE_ALL_CHALLENGE_TTL_S };
  }

  /** Verifies the proof against the anchor only, then closes every session of the account. */
  async redeem(input: { challenge: string; signature: string }): Promise<Result<{ sessionsClosed: number }, 'error.auth.proof_invalid'>> {
    const invalid = refuse('error.auth.proof_invalid', 'The proof is not valid.');
    const challenge = fromBase64url(input.challenge);
    if (challenge === null || challenge.length !== 32) return invalid;
    const now = this.#d.clock.now();
    const record = await guard('error.store.unavailable', 'consuming a revoke-all challenge', () =>
      this.#d.challenges.consumeRevokeAllChallenge(sha256Hex(challenge)),
    );
    if (record === null || now >= record.expiresAt) return invalid;
    const signature = fromBase64url(input.signature);
    if (signature === null) return invalid;
    const anchor = await guard('error.store.unavailable', 'reading the identity anchor', () => this.#d.directories.findIdentityAnchor(record.accountId));
    if (anchor === null || !verifyEd25519(anchor, logoutAllMessage(record.accountId, challenge), signature)) return invalid;
    const sessionsClosed = await this.#d.sessions.closeAll(record.accountId);
    return ok({ sessionsClosed });
  }
}
