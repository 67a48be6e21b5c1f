import { expect, it } from 'vitest';
import type { FederatedIntakeRecord, LinkRecord, Ports } from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const linkId = (): string => `link${String(++n).padStart(18, '0')}`;

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

function link(ownerId: string, over: Partial<LinkRecord> = {}): LinkRecord {
  return {
    id: linkId(),
    ownerId,
    kind: 'upload',
    albumId: id('ab00'),
    assetIds: [],
    wrappedKey: null,
    sealKey: 'c2VhbA',
    maxBytes: null,
    acceptedBytes: 0,
    createdAt: 1_000,
    expiresAt: null,
    revokedAt: null,
    ...over,
  };
}

function intake(receiverId: string, over: Partial<FederatedIntakeRecord> = {}): FederatedIntakeRecord {
  return {
    id: id('fe00'),
    uploaderId: receiverId,
    receiverId,
    peer: 'https://peer.example',
    declaredSize: 100,
    contentHash: 'ab'.repeat(32),
    state: 'Pending',
    receivedSize: null,
    createdAt: 1_000,
    expiresAt: 10_000,
    ...over,
  };
}

export function describeSponsorshipContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'sponsorship', 'SponsorshipStore', () => {
    it('creates a sponsored account owned by its sponsor, adds and removes owners', () =>
      using(setup, async ({ sponsorship: s }) => {
        const [acct, sponsor, other] = [id('sp00'), id('sp00'), id('sp00')];
        expect(await s.findSponsored(acct)).toBeNull();
        await s.createSponsored({ accountId: acct, sponsorId: sponsor, createdAt: 5 });
        expect(await s.findSponsored(acct)).toEqual({ accountId: acct, sponsorId: sponsor, createdAt: 5, owners: [sponsor] });
        expect(await s.addOwner(acct, other, 6)).toBe(true);
        expect(await s.addOwner(acct, other, 7)).toBe(true); // idempotent
        expect((await s.findSponsored(acct))!.owners).toEqual([sponsor, other]);
        expect(await s.addOwner(id('sp00'), other, 8)).toBe(false); // not a sponsored account
        expect((await s.listOwnedBy(other)).map((r) => r.accountId)).toEqual([acct]);
        expect(await s.removeOwner(acct, other)).toBe(true);
        expect(await s.removeOwner(acct, other)).toBe(false);
        expect(await s.listOwnedBy(other)).toEqual([]);
        expect((await s.findSponsored(acct))!.owners).toEqual([sponsor]);
      }));

    it('lists what an owner owns, oldest first', () =>
      using(setup, async ({ sponsorship: s }) => {
        const sponsor = id('sp00');
        const a = id('sp00');
        const b = id('sp00');
        await s.createSponsored({ accountId: b, sponsorId: sponsor, createdAt: 20 });
        await s.createSponsored({ accountId: a, sponsorId: sponsor, createdAt: 10 });
        expect((await s.listOwnedBy(sponsor)).map((r) => [r.accountId, r.owners])).toEqual([
          [a, [sponsor]],
          [b, [sponsor]],
        ]);
      }));
  });
}

export function describeLinkStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'links', 'LinkStore', () => {
    it('stores links as given and lists an owner\'s oldest first', () =>
      using(setup, async ({ links: s }) => {
        const owner = id('li00');
        const share = link(owner, { kind: 'share', assetIds: [id('as00'), id('as00')], wrappedKey: 'a2V5', sealKey: null, createdAt: 2_000, expiresAt: 9_000 });
        const upload = link(owner, { maxBytes: 500 });
        await s.createLink(share);
        await s.createLink(upload);
        await s.createLink(link(id('li00')));
        expect(await s.findLink(share.id)).toEqual(share);
        expect(await s.findLink('nope')).toBeNull();
        expect(await s.listLinks(owner)).toEqual([upload, share]);
      }));

    it('revokes only the owner\'s unrevoked link', () =>
      using(setup, async ({ links: s }) => {
        const owner = id('li00');
        const l = link(owner);
        await s.createLink(l);
        expect(await s.revokeLink(id('li00'), l.id, 3_000)).toBe(false);
        expect(await s.revokeLink(owner, l.id, 3_000)).toBe(true);
        expect(await s.revokeLink(owner, l.id, 4_000)).toBe(false);
        expect((await s.findLink(l.id))!.revokedAt).toBe(3_000);
        expect(await s.reserveDrop(l.id, 1, 5_000)).toBe('closed');
      }));

    it('reserves drop bytes within max_bytes and refuses closed links, writing nothing when refused', () =>
      using(setup, async ({ links: s }) => {
        const owner = id('li00');
        const capped = link(owner, { maxBytes: 1_000, expiresAt: 8_000 });
        const share = link(owner, { kind: 'share', wrappedKey: 'a2V5', sealKey: null });
        await s.createLink(capped);
        await s.createLink(share);
        expect(await s.reserveDrop(capped.id, 600, 2_000)).toBe('reserved');
        expect(await s.reserveDrop(capped.id, 401, 2_000)).toBe('over_max');
        expect((await s.findLink(capped.id))!.acceptedBytes).toBe(600);
        expect(await s.reserveDrop(capped.id, 400, 2_000)).toBe('reserved');
        expect(await s.reserveDrop(capped.id, 1, 2_000)).toBe('over_max');
        await s.releaseDrop(capped.id, 400);
        expect((await s.findLink(capped.id))!.acceptedBytes).toBe(600);
        expect(await s.reserveDrop(capped.id, 1, 8_000)).toBe('closed'); // expired: computed from time
        expect(await s.reserveDrop(share.id, 1, 2_000)).toBe('closed');
        expect(await s.reserveDrop('missing', 1, 2_000)).toBe('closed');
      }));

    it('never lets concurrent reservations pass max_bytes', () =>
      using(setup, async ({ links: s }) => {
        const l = link(id('li00'), { maxBytes: 1_000 });
        await s.createLink(l);
        const outcomes = await Promise.all(Array.from({ length: 30 }, () => s.reserveDrop(l.id, 70, 2_000)));
        expect(outcomes.filter((o) => o === 'reserved')).toHaveLength(14);
        expect((await s.findLink(l.id))!.acceptedBytes).toBe(980);
      }));

    it('records drops by upload id and lists a link\'s oldest first', () =>
      using(setup, async ({ links: s }) => {
        const owner = id('li00');
        const l = link(owner);
        await s.createLink(l);
        const d2 = { uploadId: id('dr00'), linkId: l.id, ownerId: owner, tokenHash: 'cd'.repeat(32), declaredSize: 20, createdAt: 2_000 };
        const d1 = { uploadId: id('dr00'), linkId: l.id, ownerId: owner, tokenHash: 'ef'.repeat(32), declaredSize: 10, createdAt: 1_000 };
        await s.recordDrop(d2);
        await s.recordDrop(d1);
        expect(await s.findDrop(d1.uploadId)).toEqual(d1);
        expect(await s.findDrop(id('dr00'))).toBeNull();
        expect(await s.listDrops(l.id)).toEqual([d1, d2]);
        expect(await s.listDrops('other')).toEqual([]);
      }));
  });
}

export function describeFederatedIntakeContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'federated', 'FederatedIntakeStore', () => {
    it('reserves within the room per (receiver, peer); expired and closed intakes free it', () =>
      using(setup, async ({ federated: s }) => {
        const r = id('fr00');
        const first = intake(r, { declaredSize: 600 });
        expect(await s.openIntake(first, 1_000, 2_000)).toBe('reserved');
        const over = intake(r, { declaredSize: 401 });
        expect(await s.openIntake(over, 1_000, 2_000)).toBe('over_budget');
        expect(await s.findIntake(over.id)).toBeNull();
        // Another peer, another receiver: their own room.
        expect(await s.openIntake(intake(r, { peer: 'https://other.example', declaredSize: 900 }), 1_000, 2_000)).toBe('reserved');
        expect(await s.openIntake(intake(id('fr00'), { declaredSize: 900 }), 1_000, 2_000)).toBe('reserved');
        expect(await s.openIntake(intake(r, { declaredSize: 400 }), 1_000, 2_000)).toBe('reserved');
        expect(await s.openIntake(intake(r, { declaredSize: 1 }), 1_000, 2_000)).toBe('over_budget');
        expect(await s.closeIntake(first.id, 'Cancelled')).toBe(true);
        expect(await s.closeIntake(first.id, 'Completed')).toBe(false);
        expect(await s.openIntake(intake(r, { declaredSize: 600 }), 1_000, 2_000)).toBe('reserved');
        // At expiry every open intake stops counting.
        expect(await s.openIntake(intake(r, { declaredSize: 1_000, expiresAt: 20_000 }), 1_000, 10_000)).toBe('reserved');
        expect(await s.openIntake(intake(r, { declaredSize: 5 }), null, 10_000)).toBe('reserved');
      }));

    it('writes a terminal intake without reserving, and moves open ones through their states', () =>
      using(setup, async ({ federated: s }) => {
        const r = id('fr00');
        const merged = intake(r, { state: 'Merged', declaredSize: 5_000 });
        expect(await s.openIntake(merged, 10, 2_000)).toBe('reserved');
        expect(await s.findIntake(merged.id)).toEqual(merged);
        const open = intake(r, { declaredSize: 10 });
        expect(await s.openIntake(open, 10, 2_000)).toBe('reserved');
        expect(await s.markReceived(open.id, 8, 10_000)).toBe(false); // expired
        expect(await s.markReceived(open.id, 8, 3_000)).toBe(true);
        expect(await s.findIntake(open.id)).toEqual({ ...open, state: 'WaitingForProcessing', receivedSize: 8 });
        expect(await s.closeIntake(open.id, 'Completed')).toBe(true);
        expect(await s.markReceived(open.id, 8, 3_000)).toBe(false);
        expect((await s.findIntake(open.id))!.state).toBe('Completed');
      }));

    it('expires open intakes whose time ran out, once', () =>
      using(setup, async ({ federated: s }) => {
        const r = id('fr00');
        const late = intake(r, { expiresAt: 5_000 });
        const received = intake(r, { expiresAt: 5_000 });
        const later = intake(r, { expiresAt: 9_000 });
        const done = intake(r, { state: 'Merged', expiresAt: 1 });
        for (const i of [late, received, later, done]) expect(await s.openIntake(i, null, 2_000)).toBe('reserved');
        expect(await s.markReceived(received.id, 10, 3_000)).toBe(true);
        expect((await s.expireIntakes(5_000)).sort()).toEqual([late.id, received.id].sort());
        expect(await s.expireIntakes(5_000)).toEqual([]);
        expect((await s.findIntake(late.id))!.state).toBe('Expired');
        expect((await s.findIntake(later.id))!.state).toBe('Pending');
        expect((await s.findIntake(done.id))!.state).toBe('Merged');
        expect(await s.closeIntake(late.id, 'Completed')).toBe(false);
      }));

    it('never lets concurrent intakes pass the room', () =>
      using(setup, async ({ federated: s }) => {
        const r = id('fr00');
        const outcomes = await Promise.all(Array.from({ length: 30 }, () => s.openIntake(intake(r, { declaredSize: 70 }), 1_000, 2_000)));
        expect(outcomes.filter((o) => o === 'reserved')).toHaveLength(14);
      }));
  });
}
