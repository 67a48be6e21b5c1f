import type { Ports } from '../ports/ports.js';
import { MemoryAlbumStore } from './memory-albums.js';
import { MemoryDeviceStore } from './memory-devices.js';
import { MemoryQuotaStore } from './memory-quota-store.js';
import { MemoryStore } from './memory-store.js';
import { MemoryTotpStore } from './memory-totp-store.js';
import { MemoryDiscoveryStore } from './memory-discovery.js';

/** The whole port set in memory: the reference implementation every adapter is held to. */
export function createMemoryPorts(): Ports {
  return { accounts: new MemoryStore(), totp: new MemoryTotpStore(), devices: new MemoryDeviceStore(), albums: new MemoryAlbumStore(), quota: new MemoryQuotaStore(), discovery: new MemoryDiscoveryStore() };
}
