export { UNITS_PER_TOKEN, admissionBound, bucketCapacity, fullBucket, takeToken } from './bucket.js';
export type { Bucket, BucketDecision } from './bucket.js';
