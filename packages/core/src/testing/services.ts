import { AccountService } from '../account/service.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { Random } from '../ports/random.js';
import type { AccountStore } from '../ports/account-store.js';
import type { SessionLedger } from '../ports/session-ledger.js';
import type { CohortMap } from '../ports/cohort-map.js';
import type { SigningKeyStore } from '../ports/signing-key-store.js';
import { DEFAULT_SESSION_POLICY, type SessionPolicy } from '../session/machine.js';
import { SessionService } from '../session/service.js';
import { AccessTokens } from '../tokens/access-token.js';
import { KeyRing } from '../tokens/key-ring.js';
import { testSecretBox } from './secret-box.js';
import type { TotpStore } from '../ports/totp-store.js';
import type { TotpThrottleStore } from '../ports/totp-throttle.js';
import type { SignInThrottleStore } from '../ports/sign-in-throttle.js';
import { TotpService } from '../totp/service.js';
import { MemoryTotpStore } from './memory-totp-store.js';
import { MemoryRegistrationAllowlist } from './memory-registration.js';
import { RegistrationGate } from '../registration/service.js';
import type { RegistrationMode } from '../registration/rules.js';
import type { RegistrationAllowlist } from '../ports/registration-allowlist.js';

export interface CoreServices {
  keyRing: KeyRing;
  tokens: AccessTokens;
  sessions: SessionService;
  accounts: AccountService;
  totp: TotpService;
  registration: RegistrationGate;
}

/** Wires the account and session services over any set of store ports. */
export async function createCoreServices(deps: {
  store: AccountStore & SessionLedger & CohortMap & SigningKeyStore;
  clock: Clock;
  random: Random;
  hasher: PasswordHasher;
  logger: Logger;
  issuer?: string;
  policy?: SessionPolicy;
  keyGraceMs?: number;
  /** The second-factor store; an empty in-memory one unless a test brings its own. */
  totpStore?: TotpStore;
  /** The per-account wrong-code record; none (only the per-challenge limit) unless given. */
  throttle?: TotpThrottleStore;
  /** Who may register: open over an empty in-memory allowlist unless a test says otherwise. */
  registration?: { mode: RegistrationMode; allowlist?: RegistrationAllowlist };
  /** The password-guessing counts and sign-in tickets; none (no throttle, no tickets) unless given. */
  signIn?: SignInThrottleStore;
  sourceFailureLimit?: number;
}): Promise<CoreServices> {
  const keyRing = new KeyRing({
    store: deps.store,
    clock: deps.clock,
    random: deps.random,
    graceMs: deps.keyGraceMs ?? 86_400_000,
    box: testSecretBox(deps.random),
  });
  await keyRing.init();
  const tokens = new AccessTokens({
    keyRing,
    clock: deps.clock,
    random: deps.random,
    issuer: deps.issuer ?? 'http://localhost:8080',
  });
  const sessions = new SessionService({
    ledger: deps.store,
    cohorts: deps.store,
    tokens,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
    policy: deps.policy ?? DEFAULT_SESSION_POLICY,
    ...(deps.signIn ? { tickets: deps.signIn } : {}),
  });
  const totp = new TotpService({
    store: deps.totpStore ?? new MemoryTotpStore(),
    accounts: deps.store,
    sessions,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
    secretKey: new Uint8Array(32).fill(7),
    issuer: 'Strongroom',
    ...(deps.throttle ? { throttle: deps.throttle } : {}),
  });
  const registration = new RegistrationGate({
    mode: deps.registration?.mode ?? 'open',
    allowlist: deps.registration?.allowlist ?? new MemoryRegistrationAllowlist(),
    clock: deps.clock,
  });
  const accounts = new AccountService({
    accounts: deps.store,
    sessions,
    hasher: deps.hasher,
    clock: deps.clock,
    random: deps.random,
    loginGate: totp,
    registration,
    ...(deps.signIn ? { signIn: deps.signIn } : {}),
    ...(deps.sourceFailureLimit !== undefined ? { sourceFailureLimit: deps.sourceFailureLimit } : {}),
  });
  return { keyRing, tokens, sessions, accounts, totp, registration };
}
