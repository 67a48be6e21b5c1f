export {
  decideActAs,
  decideOwnIdentity,
  decideOwnerRemoval,
  decideSponsor,
  decideSponsorChange,
  decideSponsorCreation,
} from './rules.js';
export type { SponsorChangeFacts, SponsorFacts } from './rules.js';
export { SponsorshipService, sponsoredAddressKey } from './service.js';
export type { SponsorshipServiceDeps } from './service.js';
