export { checkLinkKey, decideDropReservation, linkStatus, MAX_LINK_ASSETS, MAX_LINK_KEY_BYTES } from './rules.js';
export type { LinkStatus } from './rules.js';
export { dropState, LinkService, uploadTokenHash } from './service.js';
export type { DropState, DropView, Link, LinkServiceDeps, NewLink, OpenedDrop } from './service.js';
export { findLinkById, LINK_ID_BYTES, linkIdHash, openLinkId, sealClearLinkIds, sealLinkId } from './link-id.js';
