import { describe, expect, it } from 'vitest';
import {
  describeAccountStoreContract,
  describeCohortMapContract,
  describeSessionLedgerContract,
  describeSigningKeyStoreContract,
  type Setup,
} from './accounts-sessions.js';
import { describeQuotaContract } from './quota.js';
import { describeAlbumStoreContract, describeDeviceStoreContract } from './devices-albums.js';
import { missingSuites } from './registry.js';
import { describeTotpStoreContract } from './totp.js';

/**
 * Declares every contract suite against one adapter, then checks that a test of each suite in
 * SUITES actually ran. An adapter's test file calls this once and nothing else.
 */
export function describePortContracts(adapter: string, setup: Setup): void {
  describeAccountStoreContract(adapter, setup);
  describeSessionLedgerContract(adapter, setup);
  describeCohortMapContract(adapter, setup);
  describeSigningKeyStoreContract(adapter, setup);
  describeTotpStoreContract(adapter, setup);
  describeDeviceStoreContract(adapter, setup);
  describeAlbumStoreContract(adapter, setup);
  describeQuotaContract(adapter, setup);
  // Declared last, so it runs after every suite above: each must have run at least one test.
  describe(`port contracts: ${adapter}`, () => {
    it('ran every suite', () => {
      expect(missingSuites(adapter)).toEqual([]);
    });
  });
}
