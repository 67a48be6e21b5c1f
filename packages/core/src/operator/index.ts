export { censusBounds, deploymentTotals, sessionCounted, uploadCounted } from './census.js';
export type { DeploymentTotals } from './census.js';
export { OperatorService } from './service.js';
export type { AccountOverview, OperatorServiceDeps, OperatorSessionView } from './service.js';
