import { expect, it } from 'vitest';
import {
  CAPABILITY_PURGEABLE,
  CAPABILITY_REVOCABLE,
  holds,
  REVOCATION_LISTED,
  UNITS_PER_TOKEN,
  type AccountRecord,
  type Ports,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

const account = (): AccountRecord => testAccount('disc');

async function using(
  setup: Setup,
  count: number,
  body: (store: Ports['discovery'], ids: string[]) => Promise<void>,
): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const a = account();
      await ports.accounts.createAccount(a);
      ids.push(a.id);
    }
    await body(ports.discovery, ids);
  } finally {
    await cleanup?.();
  }
}

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const jti = (i: number) => `0190e000-0000-7000-8000-${String(i).padStart(12, '0')}`;

export function describeHandleStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'handles', 'HandleStore', () => {
    it('claims a user name once per account and once per name, unpublished', () =>
      using(setup, 2, async (s, [a, b]) => {
        expect(await s.findHandleByAccount(a!)).toBeNull();
        expect(await s.claimHandle({ accountId: a!, user: 'ann', at: 10 })).toBe('claimed');
        const ann = { accountId: a, user: 'ann', published: false, claimedAt: 10, retiredAt: null };
        expect(await s.findHandleByAccount(a!)).toEqual(ann);
        expect(await s.findHandleByUser('ann')).toEqual(ann);
        expect(await s.claimHandle({ accountId: a!, user: 'ann', at: 20 })).toBe('claimed');
        expect(await s.claimHandle({ accountId: a!, user: 'anne', at: 20 })).toBe('fixed');
        expect(await s.claimHandle({ accountId: b!, user: 'ann', at: 20 })).toBe('taken');
        expect(await s.findHandleByAccount(a!)).toEqual(ann);
        expect(await s.findHandleByAccount(b!)).toBeNull();
        expect(await s.findHandleByUser('anne')).toBeNull();
        expect(await s.claimHandle({ accountId: b!, user: 'bob', at: 30 })).toBe('claimed');
        expect(await s.findHandleByUser('bob')).toMatchObject({ accountId: b });
      }));

    it('gives a contested name to exactly one of two racing accounts', () =>
      using(setup, 2, async (s, [a, b]) => {
        const outcomes = await Promise.all([
          s.claimHandle({ accountId: a!, user: 'eve', at: 1 }),
          s.claimHandle({ accountId: b!, user: 'eve', at: 1 }),
        ]);
        expect([...outcomes].sort()).toEqual(['claimed', 'taken']);
      }));

    it('publishes and unpublishes only a claimed handle', () =>
      using(setup, 2, async (s, [a, b]) => {
        expect(await s.setHandlePublished(a!, true)).toBe(false);
        await s.claimHandle({ accountId: a!, user: 'ann', at: 10 });
        expect(await s.setHandlePublished(a!, true)).toBe(true);
        expect(await s.findHandleByUser('ann')).toMatchObject({ published: true });
        expect(await s.setHandlePublished(a!, false)).toBe(true);
        expect(await s.findHandleByAccount(a!)).toMatchObject({ published: false });
        expect(await s.findHandleByAccount(b!)).toBeNull();
      }));
  });
}

export function describePeerRateStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'peer-buckets', 'PeerRateStore', () => {
    it('starts each peer full, refuses when empty with a Retry-After, and refills with time', () =>
      using(setup, 0, async (s) => {
        for (let i = 0; i < 3; i++) expect((await s.takePeerToken('https://a.example', T0, 3)).admitted).toBe(true);
        const refused = await s.takePeerToken('https://a.example', T0 + 1_000, 3);
        expect(refused).toEqual({ admitted: false, bucket: { level: 3_000, updatedAt: T0 + 1_000 }, retryAfterS: 19 });
        // Another peer has a bucket of its own.
        expect((await s.takePeerToken('https://b.example', T0 + 1_000, 3)).admitted).toBe(true);
        expect((await s.takePeerToken('https://a.example', T0 + 20_000, 3)).admitted).toBe(true);
        expect((await s.takePeerToken('https://a.example', T0 + 20_000, 3)).admitted).toBe(false);
        const later = await s.takePeerToken('https://a.example', T0 + 10 * 60_000, 3);
        expect(later).toEqual({
          admitted: true,
          bucket: { level: 2 * UNITS_PER_TOKEN, updatedAt: T0 + 10 * 60_000 },
          retryAfterS: 0,
        });
      }));

    it('admits exactly the bucket to concurrent draws (atomic update)', () =>
      using(setup, 0, async (s) => {
        const draws = await Promise.all(Array.from({ length: 12 }, () => s.takePeerToken('https://c.example', T0, 5)));
        expect(draws.filter((d) => d.admitted)).toHaveLength(5);
      }));
  });
}

export function describeCapabilityRevocationContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'capability-revocations', 'CapabilityRevocationStore', () => {
    it('revokes one minted token once, and lists revocations from a cutoff, oldest first', () =>
      using(setup, 0, async (s) => {
        await s.recordMintedCapability({
          jti: jti(1),
          peer: 'https://a.example',
          issuedAt: T0,
          expiresAt: T0 + 300_000,
        });
        await s.recordMintedCapability({
          jti: jti(2),
          peer: 'https://a.example',
          issuedAt: T0,
          expiresAt: T0 + 300_000,
        });
        expect(await s.listRevokedCapabilities(0)).toEqual([]);
        expect(await s.revokeCapability(jti(9), T0)).toBe(false);
        expect(await s.revokeCapability(jti(2), T0 + 5)).toBe(true);
        expect(await s.revokeCapability(jti(2), T0 + 6)).toBe(false);
        expect(await s.revokeCapability(jti(1), T0 + 7)).toBe(true);
        expect(await s.listRevokedCapabilities(0)).toEqual([
          { jti: jti(2), revokedAt: T0 + 5, expiresAt: T0 + 300_000 },
          { jti: jti(1), revokedAt: T0 + 7, expiresAt: T0 + 300_000 },
        ]);
        expect(await s.listRevokedCapabilities(T0 + 6)).toEqual([
          { jti: jti(1), revokedAt: T0 + 7, expiresAt: T0 + 300_000 },
        ]);
        expect(await s.listRevokedCapabilities(T0 + 8)).toEqual([]);
      }));

    it('revokes every live token minted for one peer, and only those', () =>
      using(setup, 0, async (s) => {
        await s.recordMintedCapability({
          jti: jti(11),
          peer: 'https://a.example',
          issuedAt: T0,
          expiresAt: T0 + 300_000,
        });
        await s.recordMintedCapability({ jti: jti(12), peer: 'https://a.example', issuedAt: T0, expiresAt: T0 + 100 });
        await s.recordMintedCapability({
          jti: jti(13),
          peer: 'https://a.example',
          issuedAt: T0,
          expiresAt: T0 + 300_000,
        });
        await s.recordMintedCapability({
          jti: jti(14),
          peer: 'https://b.example',
          issuedAt: T0,
          expiresAt: T0 + 300_000,
        });
        expect(await s.revokeCapability(jti(13), T0 + 50)).toBe(true);
        expect(await s.revokeCapabilitiesFor('https://a.example', T0 + 200)).toBe(1);
        expect(await s.revokeCapabilitiesFor('https://a.example', T0 + 300)).toBe(0);
        expect((await s.listRevokedCapabilities(0)).map((r) => [r.jti, r.revokedAt])).toEqual([
          [jti(13), T0 + 50],
          [jti(11), T0 + 200],
        ]);
      }));

    it("revokes, lists and purges exactly the tokens core's capability filters take", () =>
      using(setup, 0, async (s) => {
        const peer = 'https://f.example';
        const tokens = [31, 32, 33, 34].map((i, k) => ({
          jti: jti(i),
          peer,
          issuedAt: T0,
          expiresAt: T0 + 100 * (k + 1),
        }));
        for (const t of tokens) await s.recordMintedCapability(t);
        await s.revokeCapability(jti(31), T0 + 50);
        const before = tokens.map((t) => ({ ...t, revokedAt: t.jti === jti(31) ? T0 + 50 : null }));
        // A revoke at T0 + 200 meets one token expiring exactly then: the filter says whether it counts.
        const at = T0 + 200;
        const revocable = before.filter((t) => holds(CAPABILITY_REVOCABLE, t, { at }));
        expect(revocable.map((t) => t.jti)).toEqual([jti(33), jti(34)]);
        expect(await s.revokeCapabilitiesFor(peer, at)).toBe(revocable.length);
        const after = before.map((t) => (revocable.includes(t) ? { ...t, revokedAt: at } : t));
        const since = T0 + 50;
        expect((await s.listRevokedCapabilities(since)).map((r) => r.jti)).toEqual(
          after.filter((t) => holds(REVOCATION_LISTED, t, { since })).map((t) => t.jti),
        );
        const cutoff = T0 + 200;
        const purged = after.filter((t) => holds(CAPABILITY_PURGEABLE, t, { before: cutoff }));
        expect(purged.map((t) => t.jti)).toEqual([jti(31), jti(32)]);
        expect(await s.purgeMintedCapabilities(cutoff)).toBe(purged.length);
      }));

    it('forgets tokens expired by a cutoff unless revoked after it', () =>
      using(setup, 0, async (s) => {
        await s.recordMintedCapability({ jti: jti(21), peer: 'https://a.example', issuedAt: T0, expiresAt: T0 + 100 });
        await s.recordMintedCapability({ jti: jti(22), peer: 'https://a.example', issuedAt: T0, expiresAt: T0 + 100 });
        await s.recordMintedCapability({ jti: jti(23), peer: 'https://a.example', issuedAt: T0, expiresAt: T0 + 100 });
        await s.recordMintedCapability({ jti: jti(24), peer: 'https://a.example', issuedAt: T0, expiresAt: T0 + 900 });
        await s.revokeCapability(jti(22), T0 + 50);
        await s.revokeCapability(jti(23), T0 + 600);
        expect(await s.purgeMintedCapabilities(T0 + 500)).toBe(2); // 21 (expired) and 22 (expired, revoked before)
        expect((await s.listRevokedCapabilities(0)).map((r) => r.jti)).toEqual([jti(23)]);
        expect(await s.revokeCapability(jti(21), T0 + 700)).toBe(false);
        expect(await s.revokeCapability(jti(24), T0 + 700)).toBe(true);
        expect(await s.purgeMintedCapabilities(T0 + 500)).toBe(0);
      }));
  });
}
