export { decideActAs, decideOwnIdentity, decideOwnerRemoval, decideSponsor, decideSponsorCreation } from './rules.js';
export type { SponsorFacts } from './rules.js';
export { SponsorshipService, sponsoredAddressKey } from './service.js';
export type { SponsorshipServiceDeps } from './service.js';
