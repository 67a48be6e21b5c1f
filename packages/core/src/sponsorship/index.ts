export { decideActAs, decideOwnerRemoval, decideSponsor } from './rules.js';
export { SponsorshipService, sponsoredAddressKey } from './service.js';
export type { SponsorshipServiceDeps } from './service.js';
