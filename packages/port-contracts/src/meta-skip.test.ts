import { createMemoryPorts } from '@strongroom/core/testing';
import { describe, expect, it } from 'vitest';
import { describeAccountStoreContract, describeCohortMapContract, describeSessionLedgerContract, describeSigningKeyStoreContract } from './accounts-sessions.js';
import { describeAlbumStoreContract, describeDeviceStoreContract } from './devices-albums.js';
import { describeQuotaContract } from './quota.js';
import { missingSuites } from './registry.js';
import { describeTotpStoreContract } from './totp.js';

// Proof that the "ran every suite" check bites: a pretend adapter declares every suite, but the
// quota suite sits in a skipped block. The check must name exactly that suite.
const adapter = 'memory-skipping-quota';
const setup = async () => ({ ports: createMemoryPorts() });
describeAccountStoreContract(adapter, setup);
describeSessionLedgerContract(adapter, setup);
describeCohortMapContract(adapter, setup);
describeSigningKeyStoreContract(adapter, setup);
describeTotpStoreContract(adapter, setup);
describeDeviceStoreContract(adapter, setup);
describeAlbumStoreContract(adapter, setup);
describe.skip('a suite an adapter skipped', () => describeQuotaContract(adapter, setup));

describe('the contract meta-check', () => {
  it('names a suite whose tests never ran', () => {
    expect(missingSuites(adapter)).toEqual(['quota']);
  });
  it('names every suite for an adapter that ran none', () => {
    expect(missingSuites('never-ran')).toHaveLength(8);
  });
});
