import { describe, expect, it } from 'vitest';
import type { BlobReference } from '../ports/asset-catalog.js';
import type { LinkRecord } from '../ports/link-store.js';
import { linkCoversBlob, mayReadBlob } from './rules.js';

const A = 'acct-a';
const S = 'acct-s';
const ref = (over: Partial<BlobReference> = {}): BlobReference => ({
  assetId: 'asset-1',
  ownerId: A,
  state: 'live',
  albumId: null,
  ...over,
});
const link = (over: Partial<LinkRecord> = {}): LinkRecord => ({
  idHash: 'link',
  sealedId: 'sealed',
  ownerId: A,
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
  ...over,
});

describe('mayReadBlob', () => {
  it('the acting account reads a blob one of its assets references, in any state', () => {
    for (const state of ['live', 'trashed', 'pending_drop'] as const)
      expect(mayReadBlob({ accountId: A }, [ref({ state })])).toBe(true);
  });
  it("no reference, another owner's reference, a guest or no account: no read", () => {
    expect(mayReadBlob({ accountId: A }, [])).toBe(false);
    expect(mayReadBlob({ accountId: A }, [ref({ ownerId: S })])).toBe(false);
    expect(mayReadBlob({ accountId: A, guestUploadId: 'u' }, [ref()])).toBe(false);
    expect(mayReadBlob({ accountId: '' }, [ref({ ownerId: '' })])).toBe(false);
  });
});

describe('linkCoversBlob', () => {
  it("an active share link covers its named live assets and its album's live assets", () => {
    expect(linkCoversBlob(link(), [ref()], 10)).toBe(true);
    expect(linkCoversBlob(link({ assetIds: [], albumId: 'alb' }), [ref({ albumId: 'alb' })], 10)).toBe(true);
    expect(linkCoversBlob(link({ assetIds: ['other'] }), [ref({ assetId: 'x' }), ref()], 10)).toBe(false);
    expect(linkCoversBlob(link({ assetIds: ['other'] }), [ref({ assetId: 'x' }), ref({ assetId: 'other' })], 10)).toBe(
      true,
    );
  });
  it('nothing else: another album, trashed or pending assets, another owner, upload links, revoked, expired, no link', () => {
    expect(linkCoversBlob(link({ assetIds: [], albumId: 'alb' }), [ref({ albumId: 'other' })], 10)).toBe(false);
    expect(linkCoversBlob(link({ assetIds: [], albumId: 'alb' }), [ref({ albumId: null })], 10)).toBe(false);
    expect(linkCoversBlob(link({ assetIds: [], albumId: null }), [ref({ albumId: null })], 10)).toBe(false);
    expect(linkCoversBlob(link(), [ref({ state: 'trashed' })], 10)).toBe(false);
    expect(
      linkCoversBlob(link({ assetIds: [], albumId: 'alb' }), [ref({ albumId: 'alb', state: 'pending_drop' })], 10),
    ).toBe(false);
    expect(linkCoversBlob(link(), [ref({ ownerId: S })], 10)).toBe(false);
    expect(linkCoversBlob(link({ kind: 'upload', assetIds: [], albumId: 'alb' }), [ref({ albumId: 'alb' })], 10)).toBe(
      false,
    );
    expect(linkCoversBlob(link({ revokedAt: 5 }), [ref()], 10)).toBe(false);
    expect(linkCoversBlob(link({ expiresAt: 10 }), [ref()], 10)).toBe(false);
    expect(linkCoversBlob(link({ expiresAt: 11 }), [ref()], 10)).toBe(true);
    expect(linkCoversBlob(null, [ref()], 10)).toBe(false);
  });
});
