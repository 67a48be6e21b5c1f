export { decideLookup, mayActForAccount, mayReach, reach } from './rules.js';
export type { AccessAction, Accessor, Looker, ObjectKind, Reachable } from './rules.js';
