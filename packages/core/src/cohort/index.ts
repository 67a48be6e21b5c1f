export { cohortHash, readCohortHash, PLATFORM_TAGS, COHORT_DOMAIN } from './cohort.js';
export type { PlatformTag } from './cohort.js';
export { cohortSighting } from './sighting.js';
