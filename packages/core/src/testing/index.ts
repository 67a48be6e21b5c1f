/**
 * Test support shared by every package: one FakeClock, one set of in-memory adapters, test identities.
 * Nothing here loads fast-check (testing/fakes.test.ts proves it): the model-based properties, which
 * do, are behind their own entry, `@strongroom/core/testing/models`.
 */
export { FakeClock } from './fake-clock.js';
export { SeededRandom } from './seeded-random.js';
export { PlainHasher } from './plain-hasher.js';
export { MemoryLogger } from './silent-logger.js';
export type { LogLine } from './silent-logger.js';
export { MemoryStore } from './memory-store.js';
export { MemoryTotpStore } from './memory-totp-store.js';
export { totpSecretBytes } from './totp-codes.js';
export { breakable } from './breakable.js';
export { createCoreServices } from './services.js';
export type { CoreServices } from './services.js';
export { MemoryDeviceStore } from './memory-devices.js';
export { FakeUploadsInFlight, MemoryAlbumStore } from './memory-albums.js';
export { TestDevice, TestIdentity } from './test-identity.js';
export { MemoryQuotaStore } from './memory-quota-store.js';
export { MemoryBlobStore, MemoryDirectBlobStore } from './memory-blob-store.js';
export { MemoryMemberUpgradeStore } from './memory-member.js';
export { MemoryCatalog } from './memory-catalog.js';
export { createMemoryPorts } from './memory-ports.js';
export { MemorySchemaStatus } from './memory-schema.js';
export { MemorySecondFactorStore } from './memory-second-factor.js';
export { MemorySignInStore } from './memory-sign-in.js';
export { MemoryDeploymentStore } from './memory-deployment.js';
export { MemoryOidcStore } from './memory-oidc.js';
export { FakeIdentityProvider } from './fake-identity-provider.js';
export type { FakePerson } from './fake-identity-provider.js';
export { MemoryDeprecationStore } from './memory-deprecations.js';
export { MemoryRegistrationAllowlist } from './memory-registration.js';
export { MemoryDeploymentCensus } from './memory-census.js';
export { MemoryUploadSegments } from './memory-segments.js';
export { MemoryAttestationKeyStore } from './memory-attestation.js';
export { MemoryLinkStore, MemorySponsorshipStore } from './memory-sharing.js';
export { MemorySyncLog } from './memory-sync.js';
export { storedLink, testLinkId } from './links.js';
export { MemoryDiscoveryStore, memoryDiscoveryState } from './memory-discovery.js';
export type { MemoryDiscoveryState } from './memory-discovery.js';
export { TEST_SECRET_KEY, testSecretBox } from './secret-box.js';
export { freshSession, staleSession } from './recent-auth.js';
export { MemoryAccountErasure } from './memory-erasure.js';
