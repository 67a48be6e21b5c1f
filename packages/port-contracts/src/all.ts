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
import { SUITES, suitesRunFor } from './registry.js';
import { describeTotpStoreContract } from './totp.js';
import { describeCapabilityRevocationContract, describeHandleStoreContract, describePeerRateStoreContract } from './discovery.js';


/**
 * Declares every contract suite against one adapter, then checks that each suite in SUITES was
 * declared. An adapter's test file calls this once and nothing else.
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
  describeHandleStoreContract(adapter, setup);
  describePeerRateStoreContract(adapter, setup);
  describeCapabilityRevocationContract(adapter, setup);
  describe(`port contracts: ${adapter}`, () => {
    it('runs every suite', () => {
      expect(suitesRunFor(adapter)).toEqual([...SUITES].sort());
    });
  });
}
