import { createMemoryPorts } from '@strongroom/core/testing';
import { describePortContracts } from './index.js';

// The in-memory reference implementation must pass the same suites as every real adapter.
describePortContracts('memory', async () => ({ ports: createMemoryPorts() }));
