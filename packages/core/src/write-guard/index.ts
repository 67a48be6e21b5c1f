export { AlbumWriteGuard } from './guard.js';
export type { AlbumWriteGuardDeps } from './guard.js';
