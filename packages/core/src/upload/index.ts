export { UploadService, BLOB_KINDS, MAX_DECLARED_SIZE } from './service.js';
export type { CreateUpload, FinalizeUpload, UploadServiceDeps, UploadView } from './service.js';
export { decideCancel, decideFinalize, decidePut, isContentHash, isInFlight, isOpenState, uploadState, OPEN_STATES, TERMINAL_STATES } from './machine.js';
export { decideCompletion, decideOpen } from './decisions.js';
export type { CompletionFacts, CompletionPlan, CompletionRefusal, OpenFacts, OpenPlan } from './decisions.js';
