export * from './accounts.js';
export * from './totp.js';
export * from './devices-albums.js';
export * from './quota.js';
export * from './second-factor.js';
export * from './oidc.js';
export * from './records.js';
export * from './sharing.js';
