export * from './manifest.js';
export * from './retention.js';
export * from './lock.js';
export * from './mac.js';
export * from './restore-closes.js';
export * from './sealing.js';
