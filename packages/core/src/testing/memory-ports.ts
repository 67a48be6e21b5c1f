import type { Ports } from '../ports/ports.js';
import { MemoryAlbumStore } from './memory-albums.js';
import { MemoryDeviceStore } from './memory-devices.js';
import { MemoryQuotaStore } from './memory-quota-store.js';
import { MemoryStore } from './memory-store.js';
import { MemoryTotpStore } from './memory-totp-store.js';
import { MemorySchemaStatus } from './memory-schema.js';
import { MemorySecondFactorStore } from './memory-second-factor.js';
import { MemorySignInStore } from './memory-sign-in.js';
import { MemoryDeploymentStore } from './memory-deployment.js';
import { MemoryOidcStore } from './memory-oidc.js';
import { MemoryDeprecationStore } from './memory-deprecations.js';
import { MemoryAttestationKeyStore } from './memory-attestation.js';
import { MemoryLinkStore, MemorySponsorshipStore } from './memory-sharing.js';
import { MemoryDiscoveryStore } from './memory-discovery.js';
import { MemoryRegistrationAllowlist } from './memory-registration.js';
import { MemoryDeploymentCensus } from './memory-census.js';
import { MemorySyncLog } from './memory-sync.js';
import { MemoryAccountErasure } from './memory-erasure.js';
import { MemoryUploadSegments } from './memory-segments.js';

/** The whole port set in memory: the reference implementation every adapter is held to. */
export function createMemoryPorts(): Ports {
  const accounts = new MemoryStore();
  const totp = new MemoryTotpStore();
  const discovery = new MemoryDiscoveryStore();
  const links = new MemoryLinkStore();
  const quota = new MemoryQuotaStore(links);
  accounts.handleUserOf = (id) => discovery.state.handles.get(id)?.user ?? null;
  const albums = new MemoryAlbumStore();
  const sync = new MemorySyncLog({ quota, albums, links });
  quota.sync = sync;
  albums.sync = sync;
  links.sync = sync;
  const devices = new MemoryDeviceStore();
  const secondFactor = new MemorySecondFactorStore({ totp, ledger: accounts });
  const signIn = new MemorySignInStore(accounts);
  const oidc = new MemoryOidcStore(accounts);
  const sponsorship = new MemorySponsorshipStore({ accounts, quota });
  return {
    accounts,
    totp,
    devices,
    albums,
    quota,
    segments: new MemoryUploadSegments(quota),
    schema: new MemorySchemaStatus(),
    secondFactor,
    signIn,
    deployment: new MemoryDeploymentStore({ ledger: accounts, totp, devices, oidc }),
    oidc,
    deprecations: new MemoryDeprecationStore(),
    attestation: new MemoryAttestationKeyStore(),
    sponsorship,
    links,
    discovery,
    registration: new MemoryRegistrationAllowlist(),
    census: new MemoryDeploymentCensus({ accounts, quota }),
    sync,
    erasure: new MemoryAccountErasure({
      accounts,
      totp,
      secondFactor,
      devices,
      oidc,
      discovery,
      links,
      quota,
      sponsorship,
      sync,
      signIn,
    }),
  };
}
