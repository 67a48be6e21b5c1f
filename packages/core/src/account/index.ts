export { AccountService } from './service.js';
export type { AccountServiceDeps, LoginGate, LoginOutcome, Profile } from './service.js';
