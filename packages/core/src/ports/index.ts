export type { Clock } from './clock.js';
export type { Random } from './random.js';
export type { PasswordHasher } from './password-hasher.js';
export type { AccountRecord, AccountStore, PasswordChange } from './account-store.js';
export type { SessionRecord, SessionLedger } from './session-ledger.js';
export type { CohortMap, CohortRecord } from './cohort-map.js';
export type { SigningKeyRecord, SigningKeyStore } from './signing-key-store.js';
export type { Logger } from './logger.js';
