/** Test support shared by every package: one FakeClock, one set of in-memory adapters. */
export { FakeClock } from './fake-clock.js';
export { SeededRandom } from './seeded-random.js';
export { PlainHasher } from './plain-hasher.js';
export { MemoryLogger } from './silent-logger.js';
export type { LogLine } from './silent-logger.js';
export { MemoryStore } from './memory-store.js';
export { MemoryTotpStore } from './memory-totp-store.js';
export { breakable } from './breakable.js';
export { createCoreServices } from './services.js';
export type { CoreServices } from './services.js';
export { MemoryDeviceStore } from './memory-devices.js';
export { FakeUploadsInFlight, MemoryAlbumStore } from './memory-albums.js';
export { TestDevice, TestIdentity } from './test-identity.js';
export { MemoryQuotaStore } from './memory-quota-store.js';
export { MemoryBlobStore } from './memory-blob-store.js';
export { sessionModelProperty } from './session-model.js';
export { MemoryMemberUpgradeStore } from './memory-member.js';
export { MemoryCatalog } from './memory-catalog.js';
