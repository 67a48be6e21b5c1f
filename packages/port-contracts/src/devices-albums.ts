import { expect, it } from 'vitest';
import type { AlbumRecord, DeviceEntry, DirectoryRecord, UpgradeIntentRecord } from '@strongroom/core';
import type { Ports, RevokeAllAdmission } from '@strongroom/core';
import { admitRevokeAllChallenge, MAX_LIVE_REVOKE_ALL_CHALLENGES, revokeAllChallengeLapsed } from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

let n = 0;
const id = (prefix: string): string => `${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;

async function withAccount(ports: Ports): Promise<string> {
  const account = testAccount('dev');
  await ports.accounts.createAccount(account);
  return account.id;
}

const bytes = (fill: number, length: number): Uint8Array => new Uint8Array(length).fill(fill);
const device = (deviceId: string, addedAt = 10): DeviceEntry => ({
  deviceId,
  ed25519: bytes(deviceId.length, 32),
  mldsa65: bytes(7, 1952),
  addedAt,
});
const directory = (accountId: string, over: Partial<DirectoryRecord> = {}): DirectoryRecord => ({
  accountId,
  identityKey: bytes(1, 32),
  seq: 1,
  devices: [device('phone')],
  body: new Uint8Array([0xa1, 1, 2, 3]),
  acceptedAt: 5_000,
  ...over,
});

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

/** Device directory, identity anchor and revoke-all challenges. */
/** Admits everything: tests of storage, not of the bound. */
const ADMIT = (): RevokeAllAdmission => ({ admitted: true });

export function describeDeviceStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'devices', 'DeviceDirectoryStore + RevokeAllChallengeStore', () => {
    it('the first directory fixes the anchor; later ones need it and a higher seq', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        expect(await s.findDirectory(a)).toBeNull();
        expect(await s.findIdentityAnchor(a)).toBeNull();
        expect(await s.findDevice(a, 'phone')).toBeNull();
        const first = directory(a, { seq: 3 });
        expect(await s.publishDirectory(first)).toBe('published');
        expect(await s.findDirectory(a)).toEqual(first);
        expect(await s.findIdentityAnchor(a)).toEqual(first.identityKey);
        expect(await s.findDevice(a, 'phone')).toEqual(device('phone'));
        expect(await s.publishDirectory(directory(a, { seq: 9, identityKey: bytes(2, 32) }))).toBe('anchor_mismatch');
        expect(await s.publishDirectory(directory(a, { seq: 3, devices: [] }))).toBe('stale_seq');
        expect(await s.publishDirectory(directory(a, { seq: 2 }))).toBe('stale_seq');
        expect(await s.findDirectory(a)).toEqual(first);
        const next = directory(a, {
          seq: 4,
          devices: [device('laptop', 20), device('tablet', 30)],
          body: new Uint8Array([9, 9]),
          acceptedAt: 6_000,
        });
        expect(await s.publishDirectory(next)).toBe('published');
        expect(await s.findDirectory(a)).toEqual(next);
        expect(await s.findDevice(a, 'phone')).toBeNull();
        expect(await s.findDevice(a, 'tablet')).toEqual(device('tablet', 30));
      }));
    it('seq grows by at most 1,000,000 per publication (the first counts from 0), so none can freeze the directory', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        expect(await s.publishDirectory(directory(a, { seq: Number.MAX_SAFE_INTEGER }))).toBe('seq_jump');
        expect(await s.publishDirectory(directory(a, { seq: 1_000_001 }))).toBe('seq_jump');
        expect(await s.findDirectory(a)).toBeNull();
        const first = directory(a, { seq: 1_000_000 });
        expect(await s.publishDirectory(first)).toBe('published');
        expect(await s.publishDirectory(directory(a, { seq: Number.MAX_SAFE_INTEGER }))).toBe('seq_jump');
        expect(await s.publishDirectory(directory(a, { seq: 2_000_001 }))).toBe('seq_jump');
        expect(await s.findDirectory(a)).toEqual(first);
        const next = directory(a, { seq: 2_000_000, body: new Uint8Array([7]) });
        expect(await s.publishDirectory(next)).toBe('published');
        expect(await s.findDirectory(a)).toEqual(next);
      }));
    it('answers when a device was listed, for the write gate, from the current directory only', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        const b = await withAccount(ports);
        expect(await s.findDeviceAddedAt(a, 'phone')).toBeNull();
        await s.publishDirectory(directory(a, { seq: 1, devices: [device('phone', 11), device('laptop', 12)] }));
        // Asked together, as the requests of one turn do, and one of them for another account.
        expect(
          await Promise.all([
            s.findDeviceAddedAt(a, 'laptop'),
            s.findDeviceAddedAt(a, 'phone'),
            s.findDeviceAddedAt(b, 'phone'),
            s.findDeviceAddedAt(a, 'tablet'),
          ]),
        ).toEqual([12, 11, null, null]);
        await s.publishDirectory(directory(a, { seq: 2, devices: [device('tablet', 30)] }));
        expect(await Promise.all([s.findDeviceAddedAt(a, 'phone'), s.findDeviceAddedAt(a, 'tablet')])).toEqual([
          null,
          30,
        ]);
      }));
    it('keeps accounts apart', () =>
      using(setup, async (ports) => {
        const a = await withAccount(ports);
        const b = await withAccount(ports);
        await ports.devices.publishDirectory(directory(a));
        expect(await ports.devices.findDevice(b, 'phone')).toBeNull();
        expect(await ports.devices.publishDirectory(directory(b, { identityKey: bytes(5, 32) }))).toBe('published');
        expect(await ports.devices.findIdentityAnchor(a)).toEqual(bytes(1, 32));
      }));
    it('a challenge is consumed exactly once, returned even when expired', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        const c = { challengeHash: 'a'.repeat(64), accountId: a, expiresAt: 2_000 };
        await s.insertRevokeAllChallenge(c, 1_000, ADMIT);
        expect(await s.consumeRevokeAllChallenge('b'.repeat(64))).toBeNull();
        const both = await Promise.all([
          s.consumeRevokeAllChallenge(c.challengeHash),
          s.consumeRevokeAllChallenge(c.challengeHash),
        ]);
        expect(both.filter((x) => x !== null)).toEqual([c]);
        const late = { challengeHash: 'c'.repeat(64), accountId: a, expiresAt: 3_000 };
        await s.insertRevokeAllChallenge(late, 2_500, ADMIT);
        expect(await s.consumeRevokeAllChallenge(late.challengeHash)).toEqual(late);
      }));
    it("drops exactly the challenges core's REVOKE_ALL_CHALLENGE_LAPSED takes when one is stored, of every account", () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        const b = await withAccount(ports);
        const now = 4_000;
        const stored = [
          { challengeHash: '1'.repeat(64), accountId: a, expiresAt: now - 1 },
          { challengeHash: '2'.repeat(64), accountId: b, expiresAt: now },
          { challengeHash: '3'.repeat(64), accountId: a, expiresAt: now + 1 },
        ];
        for (const c of stored) await s.insertRevokeAllChallenge(c, 1_000, ADMIT);
        await s.insertRevokeAllChallenge({ challengeHash: '4'.repeat(64), accountId: a, expiresAt: 9_000 }, now, ADMIT);
        // The expectation is core's rule, pinned: a challenge at its expiry is lapsed (redeem refuses it).
        const lapsed = stored.filter((c) => revokeAllChallengeLapsed(c, now));
        expect(lapsed.map((c) => c.expiresAt)).toEqual([now - 1, now]);
        for (const c of stored)
          expect(await s.consumeRevokeAllChallenge(c.challengeHash)).toEqual(lapsed.includes(c) ? null : c);
      }));
    it('drops expired challenges when a new one is stored', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        await s.insertRevokeAllChallenge(
          { challengeHash: 'd'.repeat(64), accountId: a, expiresAt: 2_000 },
          1_000,
          ADMIT,
        );
        await s.insertRevokeAllChallenge(
          { challengeHash: 'e'.repeat(64), accountId: a, expiresAt: 9_000 },
          2_000,
          ADMIT,
        );
        expect(await s.consumeRevokeAllChallenge('d'.repeat(64))).toBeNull();
        expect(await s.consumeRevokeAllChallenge('e'.repeat(64))).not.toBeNull();
      }));
    it("asks core's decision with the expiries of the account's stored challenges only, and stores nothing it refuses", () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        const b = await withAccount(ports);
        await s.insertRevokeAllChallenge(
          { challengeHash: '1'.repeat(64), accountId: a, expiresAt: 5_000 },
          1_000,
          ADMIT,
        );
        await s.insertRevokeAllChallenge(
          { challengeHash: '2'.repeat(64), accountId: b, expiresAt: 6_000 },
          1_000,
          ADMIT,
        );
        const seen: (readonly number[])[] = [];
        const refused = await s.insertRevokeAllChallenge(
          { challengeHash: '3'.repeat(64), accountId: a, expiresAt: 7_000 },
          1_500,
          (e) => {
            seen.push(e);
            return { admitted: false, retryAfterS: 4 };
          },
        );
        expect(refused).toEqual({ admitted: false, retryAfterS: 4 });
        expect(seen).toEqual([[5_000]]);
        expect(await s.consumeRevokeAllChallenge('3'.repeat(64))).toBeNull();
      }));
    it('serialises one account: concurrent requests past the bound of core never store more than it admits', () =>
      using(setup, async (ports) => {
        const s = ports.devices;
        const a = await withAccount(ports);
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            s.insertRevokeAllChallenge(
              { challengeHash: (i + 10).toString(16).padStart(64, 'f'), accountId: a, expiresAt: 9_000 },
              1_000,
              (e) => admitRevokeAllChallenge(e, 1_000),
            ),
          ),
        );
        expect(results.filter((r) => r.admitted)).toHaveLength(MAX_LIVE_REVOKE_ALL_CHALLENGES);
        expect(results.find((r) => !r.admitted)).toEqual({ admitted: false, retryAfterS: 8 });
      }));
  });
}

const PIN = '2026-04-01';
const album = (accountId: string, over: Partial<AlbumRecord> = {}): AlbumRecord => ({
  id: id('0190d000'),
  accountId,
  protocolVersion: PIN,
  createdAt: 1_000,
  upgrade: null,
  ...over,
});
const intent = (albumId: string, over: Partial<UpgradeIntentRecord> = {}): UpgradeIntentRecord => ({
  intentId: id('0190e000'),
  albumId,
  fromVersion: PIN,
  toVersion: '2026-08-01',
  proposerDevice: 'phone',
  deadlineS: 60,
  receivedAt: 10_000,
  expiresAt: 70_000,
  intentCbor: new Uint8Array([0xa1, 0x61, 0x78, 0x01]),
  ...over,
});

/** Albums, their pin and the single-live-intent rule. */
export function describeAlbumStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'albums', 'AlbumStore', () => {
    it('creates and finds albums', () =>
      using(setup, async (ports) => {
        const a = await withAccount(ports);
        const al = album(a);
        await ports.albums.createAlbum(al);
        expect(await ports.albums.findAlbum(al.id)).toEqual(al);
        expect(await ports.albums.findAlbum(id('0190d000'))).toBeNull();
        await expect(ports.albums.createAlbum(al)).rejects.toThrow();
      }));
    it('holds at most one live intent; the same intent is idempotent; expiry is computed', () =>
      using(setup, async (ports) => {
        const s = ports.albums;
        const al = album(await withAccount(ports));
        await s.createAlbum(al);
        const first = intent(al.id);
        expect(await s.proposeIntent(first, 10_000)).toEqual({ kind: 'accepted', intent: first });
        expect(await s.findAlbum(al.id)).toEqual({
          ...al,
          upgrade: { intentId: first.intentId, toVersion: '2026-08-01', receivedAt: 10_000, expiresAt: 70_000 },
        });
        expect(await s.findIntent(first.intentId)).toEqual(first);
        // The same intent again, later: unchanged, first receipt kept.
        expect(await s.proposeIntent({ ...first, receivedAt: 20_000, expiresAt: 80_000 }, 20_000)).toEqual({
          kind: 'same',
          intent: first,
        });
        expect(await s.proposeIntent({ ...first, intentCbor: new Uint8Array([0xa0]) }, 20_000)).toEqual({
          kind: 'reused',
        });
        const second = intent(al.id, { receivedAt: 69_999, expiresAt: 129_999 });
        expect(await s.proposeIntent(second, 69_999)).toEqual({ kind: 'in_flight', liveIntentId: first.intentId });
        expect(await s.findIntent(second.intentId)).toBeNull();
        // At received_at + deadline exactly the first is gone, and a new one simply replaces it.
        const third = intent(al.id, { receivedAt: 70_000, expiresAt: 130_000 });
        expect(await s.proposeIntent(third, 70_000)).toEqual({ kind: 'accepted', intent: third });
        expect((await s.findAlbum(al.id))?.upgrade?.intentId).toBe(third.intentId);
        // The expired one cannot come back.
        expect(await s.proposeIntent({ ...first, receivedAt: 200_000, expiresAt: 260_000 }, 200_000)).toEqual({
          kind: 'reused',
        });
        expect(await s.findIntent(first.intentId)).toEqual(first);
        expect(await s.proposeIntent(intent(id('0190d000')), 1)).toEqual({ kind: 'no_album' });
      }));
    it('concurrent proposals: exactly one is accepted', () =>
      using(setup, async (ports) => {
        const al = album(await withAccount(ports));
        await ports.albums.createAlbum(al);
        const outcomes = await Promise.all([1, 2, 3, 4].map(() => ports.albums.proposeIntent(intent(al.id), 10_000)));
        expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(1);
        expect(outcomes.filter((o) => o.kind === 'in_flight')).toHaveLength(3);
      }));
    it('aborts only by the live intent id', () =>
      using(setup, async (ports) => {
        const s = ports.albums;
        const al = album(await withAccount(ports));
        await s.createAlbum(al);
        const i = intent(al.id);
        await s.proposeIntent(i, 10_000);
        expect(await s.abortIntent(al.id, id('0190e000'), 10_000)).toBe(false);
        expect(await s.abortIntent(al.id, i.intentId, 70_000)).toBe(false);
        expect(await s.abortIntent(al.id, i.intentId, 69_999)).toBe(true);
        expect((await s.findAlbum(al.id))?.upgrade).toBeNull();
        expect(await s.abortIntent(al.id, i.intentId, 69_999)).toBe(false);
        expect(await s.proposeIntent(i, 20_000)).toEqual({ kind: 'reused' });
        expect(await s.abortIntent(id('0190d000'), i.intentId, 1)).toBe(false);
      }));
  });
}
