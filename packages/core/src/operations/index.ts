export { checkReadiness, schemaIsCurrent } from './readiness.js';
