export { albumCreated, ALBUM_COUNTED_STATES, assetChanges, linkChanges, SYNCED_ASSET_STATES } from './changes.js';
export {
  cursorExpired,
  DEFAULT_TOMBSTONE_DAYS,
  planKeysetPage,
  planSyncPage,
  SYNC_PAGE_LIMIT,
  tombstoneHorizon,
} from './page.js';
export type { PageChange, PagePlan, SyncPosition } from './page.js';
export { openLinkCursor, openSyncCursor, sealLinkCursor, sealSyncCursor } from './cursor.js';
export { SyncService } from './service.js';
export type { CursorRefusal, SyncLink, SyncPage, SyncPageChange, SyncServiceDeps } from './service.js';
