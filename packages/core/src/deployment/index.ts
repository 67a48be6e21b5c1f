export { judgeDeployment, secretKeyFingerprint } from './stamp.js';
export type { DeploymentVerdict } from './stamp.js';
