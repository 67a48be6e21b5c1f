export { BLOB_ANSWER, linkCoversAsset, linkCoversBlob, MAX_PRESIGN_TTL_S, mayReadBlob } from './rules.js';
export type { BlobReader } from './rules.js';
export { BlobReadService } from './service.js';
export { blobsAgree, checkBlobStore, verifyBlobs } from './verify.js';
export { putBackAllQuarantined } from './handoff.js';
export type { BlobStoreCheck, BlobVerifyReport, LedgerBlob } from './verify.js';
export type { BlobReadServiceDeps, PresignedBlob, ReadableBlob } from './service.js';
