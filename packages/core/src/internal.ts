/**
 * @strongroom/core/internal: what this repository's own SQL adapters need from core beyond the
 * supported API (row defaults, the ledger's write helpers, the throttles' refunds and keys). It is
 * not supported for anyone else: names here change with the adapters, without a version bump.
 */

// cohort
export { cohortSighting } from './cohort/sighting.js';

// versioning
export { migrationFailed, refuseAbsentSchema, stampOf } from './versioning/schema.js';

// totp
export { usableStep } from './totp/machine.js';

// devices
export { decidePublication } from './devices/directory.js';

// quota
export { emptyLedgerRecord, ledgerRecordWith, settledHardSince } from './quota/ledger-rules.js';

// assets
export { EMPTY_TRASH_CANDIDATE_STATES } from './assets/lifecycle.js';
export { decideMetadataReplace } from './assets/metadata-edit.js';

// upload
export { peerKey } from './upload/decisions.js';
export { OPEN_STATES } from './upload/machine.js';

// second-factor
export { refundCodeCheck } from './second-factor/throttle.js';

// sign-in-throttle
export { addressCountKey, refundPasswordCheck } from './sign-in-throttle/rules.js';

// attestation
export { acceptsHistoryEntry } from './attestation/history.js';

// peer-rate-limit
export { fullBucket } from './peer-rate-limit/bucket.js';

// backup
export { lockRefusal } from './backup/lock.js';
