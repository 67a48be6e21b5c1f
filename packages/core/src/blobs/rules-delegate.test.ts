import { afterEach, describe, expect, it, vi } from 'vitest';
import * as access from '../access/rules.js';
import type { BlobReference } from '../ports/asset-catalog.js';
import type { LinkRecord } from '../ports/link-store.js';
import { linkCoversBlob, mayReadBlob } from './rules.js';

// The blob read rule must not restate ownership: it asks the trust issue's one access rule. With
// that rule refusing everything, no blob is readable, whoever asks and whatever the references say.
// A spy on the module's export, restored after each test: the suite's files share one module
// context per worker, so a module mock would reach the files after this one.
let calls: unknown[][] = [];
const refuseEverything = () => {
  const spy = vi.spyOn(access, 'mayReach').mockReturnValue(false);
  calls = spy.mock.calls;
};
afterEach(() => vi.restoreAllMocks());

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
    refuseEverything();
    expect(mayReadBlob({ accountId: 'a' }, [ref])).toBe(false);
    expect(calls).toEqual([[{ accountId: 'a' }, { kind: 'asset', id: 'asset-1', accountId: 'a' }, 'read']]);
  });
  it('a share link reads as its owner, through mayReach too', () => {
    refuseEverything();
    expect(linkCoversBlob(link, [ref], 10)).toBe(false);
    expect(calls).toEqual([[{ accountId: 'a' }, { kind: 'asset', id: 'asset-1', accountId: 'a' }, 'read']]);
  });
});
