import { fromBase64url, sha256Hex } from '../encoding/bytes.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { TotpRecoveryStore } from '../ports/totp-recovery.js';
import type { TotpStore } from '../ports/totp-store.js';
import { verifyEd25519 } from '../proofs/signatures.js';
import { outlivesCredentialChange } from '../account/credential-change.js';
import { challengeOpenedAt } from '../totp/machine.js';
import type { SessionService, TokenPair } from '../session/service.js';

export const TOTP_RECOVERY_DOMAIN = 'svc-totp-recovery/v1';

/** The bytes the identity anchor signs to sign in without the second factor and remove it. */
export function totpRecoveryMessage(accountId: string, challenge: Uint8Array): Uint8Array {
  return canonicalCbor([TOTP_RECOVERY_DOMAIN, accountId, challenge]);
}

export interface TotpRecoveryServiceDeps {
  /** Where sign-in challenges live (the ones a correct password yields). */
  readonly challenges: TotpStore;
  readonly directories: DeviceDirectoryStore;
  readonly recovery: TotpRecoveryStore;
  readonly accounts: AccountStore;
  readonly sessions: SessionService;
  readonly clock: Clock;
}

const UNAVAILABLE = 'error.auth.unavailable';

/**
 * Second-factor recovery through the master key: someone who lost the authenticator but kept the
 * identity key answers the sign-in challenge with the anchor's signature instead of a code. The
 * challenge is burned before anything is judged, every failure looks the same, and the factor is
 * removed in the very store step that opens the session. Wrong proofs do not count against the
 * wrong-code throttle: they cost an Ed25519 forgery, not a six-digit guess.
 */
export class TotpRecoveryService {
  readonly #d: TotpRecoveryServiceDeps;

  constructor(deps: TotpRecoveryServiceDeps) {
    this.#d = deps;
  }

  async recover(input: {
    challenge: string;
    signature: string;
    cohortHash: string | null;
  }): Promise<Result<TokenPair, 'error.auth.proof_invalid' | 'error.auth.account_locked'>> {
    const invalid = refuse('error.auth.proof_invalid', 'The proof is not valid.');
    const challenge = fromBase64url(input.challenge);
    if (challenge === null || challenge.length !== 32) return invalid;
    const idHash = sha256Hex(challenge);
    const now = this.#d.clock.now();
    // Read who it belongs to, then burn it: only the one caller whose delete succeeded goes on.
    const record = await guard(UNAVAILABLE, 'reading the challenge', () =>
      this.#d.challenges.countTotpChallengeAttempt(idHash),
    );
    const burned = await guard(UNAVAILABLE, 'consuming the challenge', () =>
      this.#d.challenges.consumeTotpChallenge(idHash),
    );
    if (record === null || !burned || now >= record.expiresAt) return invalid;
    const signature = fromBase64url(input.signature);
    if (signature === null) return invalid;
    const { accountId } = record;
    const anchor = await guard(UNAVAILABLE, 'reading the identity anchor', () =>
      this.#d.directories.findIdentityAnchor(accountId),
    );
    if (anchor === null || !verifyEd25519(anchor, totpRecoveryMessage(accountId, challenge), signature)) return invalid;
    const account = await guard(UNAVAILABLE, 'reading the account', () => this.#d.accounts.findAccountById(accountId));
    // A challenge from before a password change, revoke-all, another recovery or a lock proves nothing now.
    if (account === null || !outlivesCredentialChange(challengeOpenedAt(record), account)) return invalid;
    if (account.lockedAt !== null) return refuse('error.auth.account_locked', 'This account is locked.');
    const pair = await this.#d.sessions.openWith(
      accountId,
      { cohortHash: input.cohortHash, credentialsAt: (session) => session.createdAt },
      (session) => this.#d.recovery.recoverTotp(accountId, session),
    );
    // The factor was disabled after the password step: nothing to recover, and the challenge is gone.
    return pair === null ? invalid : ok(pair);
  }
}
