export { AlbumService } from './service.js';
export type { AlbumServiceDeps, CreatedAlbum } from './service.js';
