export * from './accounts.js';
export * from './totp.js';
