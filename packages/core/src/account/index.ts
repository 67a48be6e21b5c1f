export { AccountService } from './service.js';
export type { AccountServiceDeps, LoginGate, LoginOutcome, Profile } from './service.js';
export { CREDENTIAL_CHANGES, ENDED_BY_CREDENTIAL_CHANGE, outlivesCredentialChange } from './credential-change.js';
export type { CredentialChange, EndedByCredentialChange } from './credential-change.js';
export { SignInMethodsService, signInMethodsOf } from './methods.js';
export type { SignInMethods, SignInMethodsServiceDeps } from './methods.js';
export { BoundedHasher, DEFAULT_HASH_QUEUE, DEFAULT_HASH_WAIT_MS, type HasherBounds } from './hash-queue.js';
