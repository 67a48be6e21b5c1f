export { decideSourcePeer } from './rules.js';
export { federatedBudget } from './budget.js';
