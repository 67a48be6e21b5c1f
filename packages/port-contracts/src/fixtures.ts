import type { AccountRecord } from '@strongroom/core';

let made = 0;

/**
 * A password account no other call made: a fresh id, in creation order, and the address
 * `<label><n>@example.org` as registered, its lower-case form as the key. `over` replaces fields.
 */
export function testAccount(label: string, over: Partial<AccountRecord> = {}): AccountRecord {
  made++;
  const address = `${label}${made}@example.org`;
  return {
    id: `0190a000-0000-7000-8000-${String(made).padStart(12, '0')}`,
    address,
    addressKey: address.toLowerCase(),
    passwordHash: 'hash',
    displayName: null,
    createdAt: 1_000,
    lockedAt: null,
    credentialsChangedAt: null,
    ...over,
  };
}
