import { describe, expect, it } from 'vitest';
import {
  describeAccountStoreContract,
  describeCohortMapContract,
  describeSessionLedgerContract,
  describeSigningKeyStoreContract,
  type Setup,
} from './accounts-sessions.js';
import { describeAlbumStoreContract, describeDeviceStoreContract } from './devices-albums.js';
import { describeCensusContract, describeQuotaContract } from './quota.js';
import { missingSuites, type SuiteName } from './registry.js';
import { describeSchemaStatusContract } from './schema-status.js';
import { describeUploadSegmentsContract } from './segments.js';
import { describeTotpStoreContract } from './totp.js';
import { describeDeploymentContract, describeSecondFactorContract } from './second-factor.js';
import { describeSignInContract } from './sign-in.js';
import { describeIdentityLinkStoreContract, describeOidcFlowStoreContract } from './oidc.js';
import {
  describeAttestationKeyStoreContract,
  describeDeprecationStoreContract,
  describeRegistrationAllowlistContract,
} from './records.js';
import { describeLinkStoreContract, describeSponsorshipContract } from './sharing.js';
import { describeSyncLogContract } from './sync.js';
import { describeAccountErasureContract } from './erasure.js';
import {
  describeCapabilityRevocationContract,
  describeHandleStoreContract,
  describePeerRateStoreContract,
} from './discovery.js';

/**
 * Every suite by name. Typed by SUITES, so a suite named there without an entry here (or the
 * reverse) does not compile; whether each one's tests really ran is checked at run time.
 */
export const CONTRACT_SUITES: Record<SuiteName, (adapter: string, setup: Setup) => void> = {
  accounts: describeAccountStoreContract,
  sessions: describeSessionLedgerContract,
  cohorts: describeCohortMapContract,
  'signing-keys': describeSigningKeyStoreContract,
  totp: describeTotpStoreContract,
  devices: describeDeviceStoreContract,
  albums: describeAlbumStoreContract,
  quota: describeQuotaContract,
  schema: describeSchemaStatusContract,
  'second-factor': describeSecondFactorContract,
  'sign-in': describeSignInContract,
  deployment: describeDeploymentContract,
  'oidc-flows': describeOidcFlowStoreContract,
  'identity-links': describeIdentityLinkStoreContract,
  deprecations: describeDeprecationStoreContract,
  attestation: describeAttestationKeyStoreContract,
  sponsorship: describeSponsorshipContract,
  links: describeLinkStoreContract,
  handles: describeHandleStoreContract,
  'peer-buckets': describePeerRateStoreContract,
  'capability-revocations': describeCapabilityRevocationContract,
  'registration-allowlist': describeRegistrationAllowlistContract,
  census: describeCensusContract,
  sync: describeSyncLogContract,
  erasure: describeAccountErasureContract,
  'upload-segments': describeUploadSegmentsContract,
};

/**
 * Declares every contract suite against one adapter, then checks that a test of each suite in
 * SUITES actually ran. An adapter's test file calls this once and nothing else.
 */
export function describePortContracts(adapter: string, setup: Setup): void {
  for (const declare of Object.values(CONTRACT_SUITES)) declare(adapter, setup);
  // Declared last, so it runs after every suite above: each must have run at least one test.
  describe(`port contracts: ${adapter}`, () => {
    it('ran every suite', () => {
      expect(missingSuites(adapter)).toEqual([]);
    });
  });
}
