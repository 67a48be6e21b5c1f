export * from './accounts.js';
export * from './totp.js';
export * from './quota.js';
export * from './devices-albums.js';
export * from './discovery.js';
