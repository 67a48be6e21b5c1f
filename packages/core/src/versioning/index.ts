export { negotiateProtocol, checkAlbumPin, isProtocolVersion, DEFAULT_PROTOCOL_WINDOW } from './protocol.js';
export type { ProtocolWindow, Negotiated } from './protocol.js';
export {
  NoDeploymentError,
  SchemaVersionError,
  stampOf,
  refuseAbsentSchema,
  refuseNewerSchema,
  migrationFailed,
} from './schema.js';
export type { SchemaStamp } from './schema.js';
export { effectiveWindow, pendingAnnouncements, deprecationNotice, decideAnnouncement } from './deprecation.js';
export type { DeprecationAnnouncement, DeprecationPolicy, AnnounceRefusal } from './deprecation.js';
export { DeprecationService } from './deprecation-service.js';
export type { DeprecationServiceOptions } from './deprecation-service.js';
