export { UploadService, BLOB_KINDS, DEFAULT_UPLOAD_POLICY, MAX_DECLARED_SIZE } from './service.js';
export type {
  CreatedUpload,
  CreateUpload,
  MultipartOffer,
  PartsView,
  SignedDirectPut,
  SignedPart,
  FinalizeUpload,
  PutUpload,
  UploadServiceDeps,
  UploadView,
} from './service.js';
export { DEFAULT_DIRECT_PUT_TTL_S, decideArrival, decideStored, directPutGrant } from './direct.js';
export {
  DEFAULT_PART_BYTES,
  MAX_PART_BYTES,
  MAX_PART_URLS,
  MAX_PARTS,
  MIN_PART_BYTES,
  countedParts,
  decidePartGrants,
  decidePartsComplete,
  directPlan,
  missingParts,
  partLength,
} from './multipart.js';
export type { DirectPlan, PartPlan, PartRequest } from './multipart.js';
export {
  decideCancel,
  decideFinalize,
  decidePut,
  isContentHash,
  isInFlight,
  isOpenState,
  uploadState,
  OPEN_STATES,
  TERMINAL_STATES,
  UPLOAD_STATES,
  CONTENT_HASH_PATTERN,
} from './machine.js';
export {
  decideCompletion,
  decideOpen,
  decideOpenGroup,
  peerKey,
  OPEN_UPLOADS_RETRY_AFTER_S,
  type GroupOpenFacts,
  type GroupOpenPlan,
} from './decisions.js';
export type { CompletionFacts, CompletionPlan, CompletionRefusal, OpenFacts, OpenPlan } from './decisions.js';
export {
  MAX_RUNS,
  ResumableUploads,
  decideAppend,
  resumableOffset,
  segmentOwner,
  segmentStagingId,
  takesSegments,
  uploadOffset,
} from './resumable.js';
export type { AppendBytes, ResumableDeps, ResumableView } from './resumable.js';
