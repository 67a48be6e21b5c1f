import { createMemoryPorts } from '@strongroom/core/testing';
import { describe, expect, it } from 'vitest';
import { CONTRACT_SUITES } from './all.js';
import { missingSuites, SUITES } from './registry.js';

// Proof that the "ran every suite" check bites: a pretend adapter declares every suite, but the
// quota suite sits in a skipped block. The check must name exactly that suite.
const adapter = 'memory-skipping-quota';
const setup = async () => {
  const ports = createMemoryPorts();
  return { ports, connect: async () => ports };
};
for (const [name, declare] of Object.entries(CONTRACT_SUITES)) {
  if (name === 'quota') describe.skip('a suite an adapter skipped', () => declare(adapter, setup));
  else declare(adapter, setup);
}

describe('the contract meta-check', () => {
  it('names a suite whose tests never ran', () => {
    expect(missingSuites(adapter)).toEqual(['quota']);
  });
  it('names every suite for an adapter that ran none', () => {
    expect(missingSuites('never-ran')).toEqual([...SUITES]);
  });
});
