export { compareDeployment, secretKeyFingerprint } from './stamp.js';
export type { DeploymentMismatch } from './stamp.js';
