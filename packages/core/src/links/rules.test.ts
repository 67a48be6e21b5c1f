import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LinkRecord } from '../ports/link-store.js';
import { checkLinkKey, decideDropReservation, linkStatus } from './rules.js';

const link = (over: Partial<LinkRecord> = {}): LinkRecord => ({
  idHash: 'l',
  sealedId: 'sealed',
  ownerId: 'o',
  kind: 'upload',
  albumId: null,
  assetIds: [],
  wrappedKey: null,
  sealKey: 'k',
  maxBytes: null,
  acceptedBytes: 0,
  createdAt: 0,
  expiresAt: null,
  revokedAt: null,
  ...over,
});

describe('link rules', () => {
  it('a link is revoked once revoked, expired from its expiry on, active before', () => {
    fc.assert(
      fc.property(
        fc.option(fc.nat(), { nil: null }),
        fc.option(fc.nat(), { nil: null }),
        fc.nat(),
        (expiresAt, revokedAt, now) => {
          const status = linkStatus({ expiresAt, revokedAt }, now);
          expect(status).toBe(
            revokedAt !== null ? 'revoked' : expiresAt !== null && now >= expiresAt ? 'expired' : 'active',
          );
        },
      ),
    );
  });

  it('a drop is reserved only on an active upload link and only within max_bytes', () => {
    fc.assert(
      fc.property(
        fc.option(fc.nat(10_000), { nil: null }),
        fc.nat(10_000),
        fc.integer({ min: 1, max: 5_000 }),
        fc.boolean(),
        (maxBytes, accepted, size, share) => {
          const l = link({ maxBytes, acceptedBytes: accepted, kind: share ? 'share' : 'upload' });
          const outcome = decideDropReservation(l, size, 10);
          if (share) expect(outcome).toBe('closed');
          else expect(outcome).toBe(maxBytes === null || accepted + size <= maxBytes ? 'reserved' : 'over_max');
        },
      ),
    );
    expect(decideDropReservation(null, 1, 0)).toBe('closed');
    expect(decideDropReservation(link({ expiresAt: 5 }), 1, 5)).toBe('closed');
    expect(decideDropReservation(link({ revokedAt: 1 }), 1, 0)).toBe('closed');
  });

  it('keys are base64url of 1 to 4096 bytes', () => {
    expect(checkLinkKey('k', Buffer.alloc(4096, 1).toString('base64url'))).toBeNull();
    expect(checkLinkKey('k', Buffer.alloc(4097, 1).toString('base64url'))).toMatch(/4096/);
    expect(checkLinkKey('seal_key', '')).toBe('seal_key must be unpadded base64url.');
    expect(checkLinkKey('wrapped_key', 'a+b/')).toBe('wrapped_key must be unpadded base64url.');
  });
});
