export { checkReadiness, schemaIsCurrent } from './readiness.js';
export { decideLease, mayReleaseLease, type LeaseRecord } from './lease.js';
