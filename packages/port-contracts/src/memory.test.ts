import { MemoryAlbumStore, MemoryDeviceStore, MemoryQuotaStore, MemoryStore, MemoryTotpStore } from '@strongroom/core/testing';
import { describePortContracts } from './index.js';

// The in-memory reference implementation must pass the same suites as every real adapter.
describePortContracts('memory', async () => ({ ports: { accounts: new MemoryStore(), totp: new MemoryTotpStore(), devices: new MemoryDeviceStore(), albums: new MemoryAlbumStore(), quota: new MemoryQuotaStore() } }));
