export { negotiateProtocol, checkAlbumPin, isProtocolVersion, DEFAULT_PROTOCOL_WINDOW } from './protocol.js';
export type { ProtocolWindow, Negotiated } from './protocol.js';
