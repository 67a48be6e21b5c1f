export { checkLinkKey, decideDropReservation, linkStatus, MAX_LINK_ASSETS, MAX_LINK_KEY_BYTES } from './rules.js';
export type { LinkStatus } from './rules.js';
export { dropState, LinkService, uploadTokenHash } from './service.js';
export type { DropState, DropView, LinkServiceDeps, NewLink, OpenedDrop } from './service.js';
