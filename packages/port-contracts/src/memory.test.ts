import { createMemoryPorts, MemoryBlobStore } from '@strongroom/core/testing';
import { describeBlobStoreContract, describePortContracts } from './index.js';

// The in-memory reference implementations must pass the same suites as every real adapter.
describePortContracts('memory', async () => {
  const ports = createMemoryPorts();
  return { ports, connect: async () => ports };
});
describeBlobStoreContract('memory', async () => ({ store: new MemoryBlobStore() }));
