export * from './accounts.js';
export * from './quota.js';
