import { expect, it } from 'vitest';
import {
  QuotaService,
  SponsorshipService,
  sponsoredAddressKey,
  uuidv7,
  type LinkRecord,
  type NewUpload,
  type Ports,
  type QuotaPolicy,
} from '@strongroom/core';
import { FakeClock, freshSession, MemoryBlobStore } from '@strongroom/core/testing';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
/** Stands in for a link's hash: the store treats the key as opaque. */
const linkKey = (): string => `link${String(++n).padStart(18, '0')}`;

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

/** A guest drop of `size` bytes through the link stored under `linkIdHash`, charged to the link owner. */
function drop(ownerId: string, linkIdHash: string, size: number): NewUpload & { dropLinkIdHash: string } {
  return {
    id: id('dr00'),
    uploaderId: ownerId,
    kind: 'original',
    declaredSize: size,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: linkIdHash,
    createdAt: 2_000,
    expiresAt: 50_000,
  };
}

function link(ownerId: string, over: Partial<LinkRecord> = {}): LinkRecord {
  return {
    idHash: linkKey(),
    sealedId: `v1.${linkKey()}.sealed`,
    ownerId,
    kind: 'upload',
    albumId: id('ab00'),
    assetIds: [],
    wrappedKey: null,
    sealKey: 'c2VhbA',
    maxBytes: null,
    acceptedBytes: 0,
    createdAt: 1_000,
    createdSessionId: null,
    expiresAt: null,
    revokedAt: null,
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
        expect(await s.findSponsored(acct)).toEqual({
          accountId: acct,
          sponsorId: sponsor,
          createdAt: 5,
          owners: [sponsor],
        });
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

    sponsoredCreationCases(setup);
  });
}

/** The sponsorship service over `ports`, with a clock and random source the test can predict. */
function sponsorshipOver(ports: Ports, now: number, bytes: Uint8Array): SponsorshipService {
  const clock = new FakeClock(now);
  const random = { bytes: (length: number) => bytes.slice(0, length) };
  const quota = new QuotaService({ ledger: ports.quota, blobs: new MemoryBlobStore(), clock, random, policy: POLICY });
  return new SponsorshipService({
    store: ports.sponsorship,
    accounts: ports.accounts,
    quota,
    clock,
    random,
    sessions: freshSession,
  });
}

/** Creating a sponsored account through the service: one transaction on every adapter. */
function sponsoredCreationCases(setup: Setup): void {
  it('writes the account row, its ledger sponsor and its sponsorship together', () =>
    using(setup, async (ports) => {
      const sponsor = id('sp10');
      const created = await sponsorshipOver(ports, 7_000, new Uint8Array(10).fill(3)).create({ accountId: sponsor });
      expect(created.ok).toBe(true);
      const acct = created.ok ? created.value.accountId : '';
      expect(await ports.sponsorship.findSponsored(acct)).toEqual({
        accountId: acct,
        sponsorId: sponsor,
        createdAt: 7_000,
        owners: [sponsor],
      });
      expect((await ports.accounts.findAccountById(acct))?.addressKey).toBe(sponsoredAddressKey(acct));
      expect((await ports.quota.readLedger(acct, 7_000)).sponsorId).toBe(sponsor);
    }));
  it('is all or nothing: a clash on the sponsorship row leaves no account row and no ledger sponsor', () =>
    using(setup, async (ports) => {
      const [sponsor, squatter] = [id('sp11'), id('sp11')];
      const bytes = new Uint8Array(10).fill(0x5a);
      // The id the service will draw, already taken in the sponsorship table only: the account
      // row and the ledger row go in first, and the sponsorship insert fails after them.
      const doomed = uuidv7(9_000, bytes);
      await ports.sponsorship.createSponsored({ accountId: doomed, sponsorId: squatter, createdAt: 1 });
      await expect(sponsorshipOver(ports, 9_000, bytes).create({ accountId: sponsor })).rejects.toThrow();
      expect(await ports.accounts.findAccountById(doomed)).toBeNull();
      expect((await ports.quota.readLedger(doomed, 9_000)).sponsorId).toBeNull();
      expect(await ports.sponsorship.findSponsored(doomed)).toEqual({
        accountId: doomed,
        sponsorId: squatter,
        createdAt: 1,
        owners: [squatter],
      });
      expect(await ports.sponsorship.listOwnedBy(sponsor)).toEqual([]);
    }));
  it("refuses, on facts read in its transaction, a sponsor that is a sponsored account or another's payee; nothing is written", () =>
    using(setup, async (ports) => {
      const [sponsored, payee, payer] = [id('sp12'), id('sp12'), id('sp12')];
      await ports.sponsorship.createSponsored({ accountId: sponsored, sponsorId: payer, createdAt: 1 });
      expect((await ports.sponsorship.setSponsor(payee, payer)).ok).toBe(true);
      for (const [n, sponsorId] of [sponsored, payee].entries()) {
        const account = {
          id: id('sp13'),
          address: '',
          addressKey: sponsoredAddressKey(`x${n}`),
          passwordHash: null,
          displayName: null,
          createdAt: 2,
          lockedAt: null,
          credentialsChangedAt: null,
        };
        const refused = await ports.sponsorship.createSponsoredAccount({ account, sponsorId });
        expect(refused.ok ? null : refused.code).toBe('error.sponsored.cannot_sponsor');
        expect(await ports.accounts.findAccountById(account.id)).toBeNull();
        expect((await ports.quota.readLedger(account.id, 2)).sponsorId).toBeNull();
        expect(await ports.sponsorship.findSponsored(account.id)).toBeNull();
        expect(await ports.sponsorship.listOwnedBy(sponsorId)).toEqual([]);
      }
      // Through the service the payee gets the same refusal (it is a fact of the ledger, not of the request).
      const viaService = await sponsorshipOver(ports, 3, new Uint8Array(10).fill(1)).create({ accountId: payee });
      expect(viaService.ok ? null : viaService.code).toBe('error.sponsored.cannot_sponsor');
    }));
  it("setSponsor: one level only, on facts read in its transaction (a payer that pays through another, a payee that pays for others, itself, a sponsored account's creator replaced); refused, nothing is written", () =>
    using(setup, async (ports) => {
      const s = ports.sponsorship;
      const [payer, payee, free, other] = [id('sp14'), id('sp14'), id('sp14'), id('sp14')];
      expect(await s.setSponsor(payee, payer)).toEqual({ ok: true, value: undefined });
      const kid = await sponsorshipOver(ports, 3, new Uint8Array(10).fill(2)).create({ accountId: free });
      const kidId = kid.ok ? kid.value.accountId : '';
      const sponsors = () =>
        Promise.all(
          [payer, payee, free, other, kidId].map(async (a) => (await ports.quota.readLedger(a, 3)).sponsorId),
        );
      const before = await sponsors();
      expect(before).toEqual([null, payer, null, null, free]);
      for (const [accountId, sponsorId] of [
        [other, payee], // the payer pays through another (the operator's payee)
        [other, kidId], // the payer is a sponsored account
        [payer, other], // the payee already pays for an account the operator put under it
        [free, other], // the payee already pays for a sponsored account it created
        [other, other],
        [kidId, other], // a sponsored account keeps the payer that created it
        [kidId, null],
      ] as const) {
        const r = await s.setSponsor(accountId, sponsorId);
        expect(r.ok ? null : r.code, `${accountId} under ${sponsorId}`).toBe('error.sponsored.cannot_sponsor');
        expect(await sponsors()).toEqual(before);
      }
      expect(await s.setSponsor(kidId, free)).toEqual({ ok: true, value: undefined });
      // Ending a sponsorship frees both sides.
      expect(await s.setSponsor(payee, null)).toEqual({ ok: true, value: undefined });
      expect(await s.setSponsor(payer, other)).toEqual({ ok: true, value: undefined });
      expect((await ports.quota.readLedger(payer, 3)).sponsorId).toBe(other);
    }));

  it('racing changes over several connections never make a chain: A under B against B under C, and A under B against A creating a sponsored account', async () => {
    const { ports, connect, cleanup } = await setup();
    try {
      const others = await Promise.all([connect(), connect()]);
      for (let round = 0; round < 6; round++) {
        const [a, b, c] = [id('sp15'), id('sp15'), id('sp15')];
        // Ledger rows that exist already: creating one would itself make the second writer wait.
        for (const x of [a, b, c]) await ports.quota.setSuspended(x, null);
        const [ab, bc] = await Promise.all([
          others[0]!.sponsorship.setSponsor(a, b),
          others[1]!.sponsorship.setSponsor(b, c),
        ]);
        expect([ab.ok, bc.ok].filter(Boolean)).toHaveLength(1);
        const [la, lb] = await Promise.all([a, b].map(async (x) => (await ports.quota.readLedger(x, 3)).sponsorId));
        expect(la === null || lb === null).toBe(true);
        const [d, e] = [id('sp15'), id('sp15')];
        for (const x of [d, e]) await ports.quota.setSuspended(x, null);
        const bytes = new Uint8Array(10).fill(round + 10);
        const [de, created] = await Promise.all([
          others[0]!.sponsorship.setSponsor(d, e),
          sponsorshipOver(others[1]!, 4, bytes).create({ accountId: d }),
        ]);
        expect([de.ok, created.ok].filter(Boolean)).toHaveLength(1);
      }
    } finally {
      await cleanup?.();
    }
  });
}

export function describeLinkStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'links', 'LinkStore', () => {
    it("stores links as given and lists an owner's oldest first", () =>
      using(setup, async ({ links: s }) => {
        const owner = id('li00');
        const share = link(owner, {
          kind: 'share',
          assetIds: [id('as00'), id('as00')],
          wrappedKey: 'a2V5',
          sealKey: null,
          createdAt: 2_000,
          expiresAt: 9_000,
        });
        const upload = link(owner, { maxBytes: 500, createdSessionId: id('se00') });
        await s.createLink(share);
        await s.createLink(upload);
        await s.createLink(link(id('li00')));
        expect(await s.findLink(share.idHash)).toEqual(share);
        expect(await s.findLink('nope')).toBeNull();
        expect(await s.listLinks(owner)).toEqual([upload, share]);
      }));

    it("revokes only the owner's unrevoked link, cancelling its drops still uploading in the same transaction; finalized drops stay", () =>
      using(setup, async ({ links: s, quota: q }) => {
        const owner = id('li00');
        const l = link(owner);
        await s.createLink(l);
        const open = await q.openDrop(drop(owner, l.idHash, 300), 'ab'.repeat(32), POLICY, 2_000);
        const done = await q.openDrop(drop(owner, l.idHash, 100), 'cd'.repeat(32), POLICY, 2_000);
        expect(open.ok && done.ok).toBe(true);
        const doneId = done.ok ? done.value.id : '';
        expect(await q.markReceived(doneId, { size: 100, hash: 'ee'.repeat(32) }, 2_000)).toBe(true);
        expect(
          await q.completeUpload(
            {
              uploadId: doneId,
              contentHash: 'ee'.repeat(32),
              size: 100,
              asset: { create: { id: doneId, ownerId: owner, dropExpiresAt: 99_000 } },
            },
            POLICY,
            2_000,
          ),
        ).toMatchObject({ outcome: 'completed' });
        expect(await q.readLedger(owner, 2_000)).toMatchObject({ charged: 100, reserved: 300 });
        expect(await q.revokeLink(id('li00'), l.idHash, POLICY, 3_000)).toEqual({ revoked: false, cancelled: [] });
        const revoked = await q.revokeLink(owner, l.idHash, POLICY, 3_000);
        expect(revoked).toEqual({ revoked: true, cancelled: [open.ok ? open.value.id : ''] });
        expect(await q.readLedger(owner, 3_000)).toMatchObject({ charged: 100, reserved: 0 });
        expect((await q.findUpload(open.ok ? open.value.id : ''))!.state).toBe('Cancelled');
        expect(await q.findAsset(doneId)).toMatchObject({ state: 'pending_drop' });
        expect(await q.revokeLink(owner, l.idHash, POLICY, 4_000)).toEqual({ revoked: false, cancelled: [] });
        expect((await s.findLink(l.idHash))!.revokedAt).toBe(3_000);
        expect(await q.openDrop(drop(owner, l.idHash, 1), 'ab'.repeat(32), POLICY, 5_000)).toMatchObject({
          ok: false,
          code: 'error.not_found',
        });
      }));

    it("opens a drop with its link's cap, the session, the reservation and the drop record together; refused, nothing is written", () =>
      using(setup, async ({ links: s, quota: q }) => {
        const owner = id('li00');
        const capped = link(owner, { maxBytes: 1_000, expiresAt: 8_000 });
        const share = link(owner, { kind: 'share', wrappedKey: 'a2V5', sealKey: null });
        await s.createLink(capped);
        await s.createLink(share);
        const first = drop(owner, capped.idHash, 600);
        expect(await q.openDrop(first, 'ab'.repeat(32), POLICY, 2_000)).toMatchObject({
          ok: true,
          value: { id: first.id, state: 'Pending', dropLinkIdHash: capped.idHash },
        });
        expect(await s.findDrop(first.id)).toEqual({
          uploadId: first.id,
          linkIdHash: capped.idHash,
          ownerId: owner,
          tokenHash: 'ab'.repeat(32),
          declaredSize: 600,
          createdAt: 2_000,
        });
        const over = drop(owner, capped.idHash, 401);
        expect(await q.openDrop(over, 'cd'.repeat(32), POLICY, 2_000)).toMatchObject({
          ok: false,
          code: 'error.quota.exceeded',
        });
        expect(await s.findDrop(over.id)).toBeNull();
        expect(await q.findUpload(over.id)).toBeNull();
        expect((await s.findLink(capped.idHash))!.acceptedBytes).toBe(600);
        expect(await q.readLedger(owner, 2_000)).toMatchObject({ reserved: 600 });
        expect((await q.openDrop(drop(owner, capped.idHash, 400), 'ef'.repeat(32), POLICY, 2_000)).ok).toBe(true);
        expect(await q.openDrop(drop(owner, capped.idHash, 1), 'ef'.repeat(32), POLICY, 2_000)).toMatchObject({
          ok: false,
          code: 'error.quota.exceeded',
        });
        expect(await q.openDrop(drop(owner, capped.idHash, 1), 'ef'.repeat(32), POLICY, 8_000)).toMatchObject({
          ok: false,
          code: 'error.not_found',
        }); // expired: from time
        expect(await q.openDrop(drop(owner, share.idHash, 1), 'ef'.repeat(32), POLICY, 2_000)).toMatchObject({
          ok: false,
          code: 'error.not_found',
        });
        expect(await q.openDrop(drop(owner, 'missing', 1), 'ef'.repeat(32), POLICY, 2_000)).toMatchObject({
          ok: false,
          code: 'error.not_found',
        });
        expect(await s.listDrops(capped.idHash)).toHaveLength(2);
        expect(await s.listDrops('other')).toEqual([]);
      }));

    it('never lets concurrent drops pass max_bytes', () =>
      using(setup, async ({ links: s, quota: q }) => {
        const owner = id('li00');
        const l = link(owner, { maxBytes: 1_000 });
        await s.createLink(l);
        const outcomes = await Promise.all(
          Array.from({ length: 30 }, () => q.openDrop(drop(owner, l.idHash, 70), 'ab'.repeat(32), POLICY, 2_000)),
        );
        expect(outcomes.filter((o) => o.ok)).toHaveLength(14);
        expect((await s.findLink(l.idHash))!.acceptedBytes).toBe(980);
        expect(await s.listDrops(l.idHash)).toHaveLength(14);
      }));

    it('lists the links an earlier build stored in clear and moves one, its drops and their sessions with it, to its hash and sealed id, once', () =>
      using(setup, async ({ links: s, quota: q }) => {
        const owner = id('li00');
        // As an earlier build stored it: keyed by its clear id, nothing sealed.
        const clear = link(owner, { sealedId: null, maxBytes: 1_000 });
        const sealed = link(owner);
        await s.createLink(clear);
        await s.createLink(sealed);
        const d = drop(owner, clear.idHash, 300);
        expect((await q.openDrop(d, 'ab'.repeat(32), POLICY, 2_000)).ok).toBe(true);
        expect(await s.listClearLinkIds()).toContain(clear.idHash);
        expect(await s.listClearLinkIds()).not.toContain(sealed.idHash);

        const to = { idHash: linkKey(), sealedId: 'v1.moved.sealed' };
        expect(await q.rekeyLink(clear.idHash, to)).toBe(true);
        expect(await s.findLink(clear.idHash)).toBeNull();
        expect(await s.findLink(to.idHash)).toEqual({ ...clear, ...to, acceptedBytes: 300 });
        expect(await s.findDrop(d.id)).toMatchObject({ uploadId: d.id, linkIdHash: to.idHash });
        expect(await s.listDrops(to.idHash)).toHaveLength(1);
        expect(await s.listDrops(clear.idHash)).toEqual([]);
        expect((await q.findUpload(d.id))!.dropLinkIdHash).toBe(to.idHash);
        expect(await s.listClearLinkIds()).not.toContain(clear.idHash);
        expect((await s.listLinks(owner)).map((l) => l.idHash).sort()).toEqual([sealed.idHash, to.idHash].sort());

        // Once only; a sealed link and an unknown key are never moved.
        expect(await q.rekeyLink(clear.idHash, { idHash: linkKey(), sealedId: 'v1.again.sealed' })).toBe(false);
        expect(await q.rekeyLink(sealed.idHash, { idHash: linkKey(), sealedId: 'v1.again.sealed' })).toBe(false);
        expect(await q.rekeyLink(linkKey(), { idHash: linkKey(), sealedId: 'v1.again.sealed' })).toBe(false);
        expect(await s.findLink(sealed.idHash)).toEqual(sealed);
        // Purging what the move left changes no live row.
        await s.purgeMovedLinkIds();
        expect(await s.findLink(to.idHash)).toEqual({ ...clear, ...to, acceptedBytes: 300 });
        expect(await s.findDrop(d.id)).toMatchObject({ uploadId: d.id, linkIdHash: to.idHash });
        expect((await q.findUpload(d.id))!.dropLinkIdHash).toBe(to.idHash);
        expect(await s.listClearLinkIds()).not.toContain(clear.idHash);
        // The moved link works as any other: revoking it cancels the drop opened before the move.
        expect(await q.revokeLink(owner, to.idHash, POLICY, 3_000)).toEqual({ revoked: true, cancelled: [d.id] });
      }));

    it('two processes moving the same link at once move it once', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const other = await connect();
        for (let round = 0; round < 5; round++) {
          const clear = link(id('li01'), { sealedId: null });
          await ports.links.createLink(clear);
          const idHash = linkKey();
          const outcomes = await Promise.all([
            ports.quota.rekeyLink(clear.idHash, { idHash, sealedId: 'v1.a.a' }),
            other.quota.rekeyLink(clear.idHash, { idHash, sealedId: 'v1.b.b' }),
          ]);
          expect(outcomes.filter(Boolean)).toHaveLength(1);
          expect((await ports.links.findLink(idHash))!.sealedId).toBe(outcomes[0] ? 'v1.a.a' : 'v1.b.b');
          expect(await ports.links.findLink(clear.idHash)).toBeNull();
        }
      } finally {
        await cleanup?.();
      }
    });
  });
}
