export * from './manifest.js';
export * from './retention.js';
export * from './lock.js';
