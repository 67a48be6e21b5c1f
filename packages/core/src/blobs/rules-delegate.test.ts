import { describe, expect, it, vi } from 'vitest';
import type { BlobReference } from '../ports/asset-catalog.js';
import type { LinkRecord } from '../ports/link-store.js';

// The blob read rule must not restate ownership: it asks the trust issue's one access rule. With
// that rule refusing everything, no blob is readable, whoever asks and whatever the references say.
const calls: unknown[][] = [];
vi.mock('../access/rules.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../access/rules.js')>();
  return {
    ...real,
    mayReach: (...args: unknown[]) => {
      calls.push(args);
      return false;
    },
  };
});

const { linkCoversBlob, mayReadBlob } = await import('./rules.js');

const ref: BlobReference = { assetId: 'asset-1', ownerId: 'a', state: 'live', albumId: null };
const link: LinkRecord = {
  idHash: 'L',
  sealedId: 'sealed',
  ownerId: 'a',
  kind: 'share',
  albumId: null,
  assetIds: ['asset-1'],
  wrappedKey: 'k',
  sealKey: null,
  maxBytes: null,
  acceptedBytes: 0,
  createdAt: 0,
  expiresAt: null,
  revokedAt: null,
};

describe('the blob read rule decides through access/rules.ts mayReach', () => {
  it('an account reading its own blob is asked of mayReach, as a read of the referencing asset', () => {
    calls.length = 0;
    expect(mayReadBlob({ accountId: 'a' }, [ref])).toBe(false);
    expect(calls).toEqual([[{ accountId: 'a' }, { kind: 'asset', id: 'asset-1', accountId: 'a' }, 'read']]);
  });
  it('a share link reads as its owner, through mayReach too', () => {
    calls.length = 0;
    expect(linkCoversBlob(link, [ref], 10)).toBe(false);
    expect(calls).toEqual([[{ accountId: 'a' }, { kind: 'asset', id: 'asset-1', accountId: 'a' }, 'read']]);
  });
});
