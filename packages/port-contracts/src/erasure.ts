import { expect, it } from 'vitest';
import {
  sponsoredAddressKey,
  type CompleteOutcome,
  type NewUpload,
  type Ports,
  type QuotaPolicy,
  type SessionRecord,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { testAccount } from './fixtures.js';
import { describeContract } from './registry.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const hash = (i: number): string => `e${String(++n).padStart(4, '0')}${i.toString(16).padStart(59, '0')}`;
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};
const NOW = 10_000;

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

function upload(uploaderId: string, over: Partial<NewUpload> = {}): NewUpload {
  return {
    id: id('e100'),
    uploaderId,
    kind: 'original',
    declaredSize: 100,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: 1_000,
    expiresAt: 1_000_000,
    ...over,
  };
}
const session = (accountId: string): SessionRecord => ({
  id: id('e200'),
  accountId,
  tokenHash: id('e300'),
  cohortHash: null,
  createdAt: 1_000,
  refreshedAt: 1_000,
  lastUsedAt: 1_000,
  accessFloor: 1_000,
  closedAt: null,
  authenticatedAt: 1_000,
  method: 'password',
});
function sponsoredAccount(label: string) {
  const a = testAccount(label, { address: null, passwordHash: null });
  return { ...a, addressKey: sponsoredAddressKey(a.id) };
}
const outcome = (c: CompleteOutcome): string => (typeof c === 'string' ? c : c.outcome);

/** An open upload session of `uploaderId` (charged to its payer); its id. */
async function opened(p: Ports, uploaderId: string, size = 100): Promise<string> {
  const u = upload(uploaderId, { declaredSize: size });
  expect((await p.quota.openUpload(u, POLICY, 1_000)).ok).toBe(true);
  return u.id;
}
/** A finished original of `uploaderId` holding `contentHash`; its asset id. */
async function stored(p: Ports, uploaderId: string, contentHash: string, size: number): Promise<string> {
  const assetId = await opened(p, uploaderId, size);
  expect(
    outcome(
      await p.quota.completeUpload(
        {
          uploadId: assetId,
          contentHash,
          size,
          asset: { create: { id: assetId, ownerId: uploaderId, dropExpiresAt: null } },
        },
        POLICY,
        1_000,
      ),
    ),
  ).not.toBe('not_open');
  return assetId;
}

export function describeAccountErasureContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'erasure', 'AccountErasureStore', () => {
    it('deletes the account and its sponsored accounts in one call, and leaves every other account as it was', () =>
      using(setup, async (p) => {
        const gone = testAccount('gone');
        const other = testAccount('other');
        const payee = testAccount('payee');
        for (const a of [gone, other, payee]) expect(await p.accounts.createAccount(a)).toBe('created');
        // A sponsored account it pays for, and one of another sponsor that it co-owns.
        const kid = sponsoredAccount('kid');
        expect(await p.sponsorship.createSponsoredAccount({ account: kid, sponsorId: gone.id })).toEqual({
          ok: true,
          value: undefined,
        });
        const otherKid = sponsoredAccount('okid');
        expect(await p.sponsorship.createSponsoredAccount({ account: otherKid, sponsorId: other.id })).toEqual({
          ok: true,
          value: undefined,
        });
        expect(await p.sponsorship.addOwner(otherKid.id, gone.id, 1_000)).toBe(true);
        // A registered account the operator made it pay for.
        expect(await p.sponsorship.setSponsor(payee.id, gone.id)).toEqual({ ok: true, value: undefined });

        const goneSession = session(gone.id);
        const otherSession = session(other.id);
        expect(await p.accounts.openSession(goneSession, null)).toBe(true);
        expect(await p.accounts.openSession(otherSession, null)).toBe(true);
        expect(await p.totp.savePendingTotp({ accountId: gone.id, sealedSecret: 'sealed', at: 1_000 })).toBe(true);
        expect(
          await p.oidc.insertLink({
            issuer: 'https://idp.example',
            subject: `s${gone.id}`,
            accountId: gone.id,
            createdAt: 1_000,
          }),
        ).toBe('linked');
        expect(await p.discovery.claimHandle({ accountId: gone.id, user: `gone${n}`, at: 1_000 })).toBe('claimed');
        expect(await p.discovery.setHandlePublished(gone.id, true)).toBe(true);
        const user = (await p.discovery.findHandleByAccount(gone.id))!.user;
        await p.discovery.recordMintedCapability({
          jti: id('e400'),
          peer: 'https://peer.example',
          accountId: gone.id,
          issuedAt: 1_000,
          expiresAt: 1_000_000,
        });
        const otherJti = id('e400');
        await p.discovery.recordMintedCapability({
          jti: otherJti,
          peer: 'https://peer.example',
          accountId: other.id,
          issuedAt: 1_000,
          expiresAt: 1_000_000,
        });

        // Blobs: one only it holds, one it stored first that the other account holds too (dedup).
        const shared = hash(1);
        const own = hash(2);
        await stored(p, gone.id, own, 300);
        await stored(p, gone.id, shared, 500);
        const othersAsset = await stored(p, other.id, shared, 500);
        const kidBlob = hash(3);
        const kidAsset = await stored(p, kid.id, kidBlob, 70);
        // Uploads in flight: its own, its sponsored account's, a guest's drop through its link, and the other account's.
        const linkIdHash = `link${String(++n).padStart(18, '0')}`;
        await p.links.createLink({
          idHash: linkIdHash,
          sealedId: 'v1.x.sealed',
          ownerId: gone.id,
          kind: 'upload',
          albumId: null,
          assetIds: [],
          wrappedKey: null,
          sealKey: 'c2VhbA',
          maxBytes: null,
          acceptedBytes: 0,
          createdAt: 1_000,
          expiresAt: null,
          revokedAt: null,
        });
        const drop = upload(gone.id, { dropLinkIdHash: linkIdHash, declaredSize: 40 });
        expect(
          (await p.quota.openDrop({ ...drop, dropLinkIdHash: linkIdHash }, 'aa'.repeat(32), POLICY, 1_000)).ok,
        ).toBe(true);
        const goneUpload = await opened(p, gone.id, 11);
        const kidUpload = await opened(p, kid.id, 13);
        const otherUpload = await opened(p, other.id, 17);

        const otherView = async () => ({
          ledger: await p.quota.readLedger(other.id, NOW),
          asset: await p.quota.findAsset(othersAsset),
          upload: await p.quota.findUpload(otherUpload),
          sync: await p.sync.readSync(other.id, 0, 100),
        });
        const otherBefore = await otherView();
        expect((await p.sync.readSync(gone.id, 0, 100)).entries.length).toBeGreaterThan(0);

        const done = await p.erasure.eraseAccount(gone.id, POLICY, NOW);
        expect(done).toEqual({
          ok: true,
          value: {
            erased: [gone.id, kid.id],
            cancelledUploads: [drop.id, goneUpload, kidUpload].sort(),
            purgedAssets: 3,
          },
        });
        expect(await p.erasure.eraseAccount(testAccount('nobody').id, POLICY, NOW)).toMatchObject({
          ok: false,
          code: 'error.not_found',
        });

        // Every way in is gone; the address is free, the handle is not; the row stays, stamped.
        expect(await p.accounts.findAccountByAddress(gone.addressKey!)).toBeNull();
        expect(await p.accounts.findAccountById(gone.id)).toEqual({
          ...gone,
          address: null,
          addressKey: null,
          passwordHash: null,
          displayName: null,
          credentialsChangedAt: NOW,
          deletedAt: NOW,
        });
        expect(await p.accounts.findAccountById(other.id)).toEqual(other);
        expect((await p.census.listAccounts(null, 100)).find((a) => a.id === gone.id)).toMatchObject({
          deletedAt: NOW,
        });
        expect(
          (await p.census.countDeployment({ now: NOW, sessionsCreatedAfter: 0, sessionsRefreshedAfter: 0 })).accounts,
        ).toBe(3);
        expect((await p.accounts.findSessionById(goneSession.id))!.closedAt).toBe(NOW);
        expect(await p.accounts.listOpenSessions(gone.id)).toEqual([]);
        expect(await p.totp.findTotpEnrollment(gone.id)).toBeNull();
        expect(await p.oidc.listLinks(gone.id)).toEqual([]);
        expect(await p.discovery.findHandleByAccount(gone.id)).toMatchObject({
          user,
          published: false,
          retiredAt: NOW,
        });
        expect(await p.discovery.claimHandle({ accountId: other.id, user, at: NOW })).toBe('taken');
        expect(await p.accounts.createAccount({ ...gone, id: id('e500') })).toBe('created');
        expect((await p.discovery.listRevokedCapabilities(0)).map((r) => r.jti)).not.toContain(otherJti);
        expect(await p.discovery.listRevokedCapabilities(0)).toHaveLength(1);
        expect((await p.links.findLink(linkIdHash))!.revokedAt).toBe(NOW);
        // Its sponsored account and its co-ownership went; the payee pays for itself.
        expect(await p.sponsorship.findSponsored(kid.id)).toBeNull();
        expect((await p.sponsorship.findSponsored(otherKid.id))!.owners).toEqual([other.id]);
        expect((await p.quota.readLedger(payee.id, NOW)).sponsorId).toBeNull();
        expect(await p.quota.findAsset(kidAsset)).toBeNull();
        // Its reservations are released; the charges stay until the sweep.
        expect(await p.quota.readLedger(gone.id, NOW)).toMatchObject({ reserved: 0, charged: 300 + 500 + 70 });

        // The other account: exactly as it was.
        expect(await p.accounts.listOpenSessions(other.id)).toEqual([otherSession]);
        expect(await otherView()).toEqual(otherBefore);
        expect(await p.sync.readSync(gone.id, 0, 100)).toMatchObject({ entries: [], head: 0 });

        // The sweep credits what no one else references, to whoever it was charged.
        const swept = await p.quota.sweep(POLICY, NOW);
        expect(swept.swept.map((b) => b.contentHash).sort()).toEqual([own, kidBlob].sort());
        expect(swept.swept.every((b) => b.chargedTo === gone.id)).toBe(true);
        expect(await p.quota.findBlob(shared)).toMatchObject({ chargedTo: gone.id });
        expect(await p.quota.readLedger(other.id, NOW)).toEqual(otherBefore.ledger);
        expect((await p.quota.readLedger(gone.id, NOW)).charged).toBe(500);
      }));

    it("voids the account's sign-in tickets in the same step, and no one else's", () =>
      using(setup, async (p) => {
        const gone = testAccount('tgone');
        const other = testAccount('tother');
        for (const a of [gone, other]) expect(await p.accounts.createAccount(a)).toBe('created');
        const ticket = (accountId: string) => ({
          ticketHash: hash(7),
          accountId,
          issuedAt: 1_000,
          expiresAt: 1_000_000,
          credentialsAt: null,
          wrongPasswords: 0,
        });
        const mine = ticket(gone.id);
        const theirs = ticket(other.id);
        await p.signIn.issueSignInTicket(mine);
        await p.signIn.issueSignInTicket(theirs);
        expect((await p.erasure.eraseAccount(gone.id, POLICY, NOW)).ok).toBe(true);
        expect(await p.signIn.findSignInTicket(mine.ticketHash)).toBeNull();
        expect(await p.signIn.findSignInTicket(theirs.ticketHash)).toEqual(theirs);
      }));

    it('deleting a deleted account again ends what a request in flight wrote for it afterwards, and keeps the first stamp', () =>
      using(setup, async (p) => {
        const gone = testAccount('again');
        expect(await p.accounts.createAccount(gone)).toBe('created');
        expect(await p.erasure.eraseAccount(gone.id, POLICY, NOW)).toEqual({
          ok: true,
          value: { erased: [gone.id], cancelledUploads: [], purgedAssets: 0 },
        });
        // What a request that passed authentication before the deletion wrote after it.
        const linkIdHash = `link${String(++n).padStart(18, '0')}`;
        await p.links.createLink({
          idHash: linkIdHash,
          sealedId: 'v1.x.sealed',
          ownerId: gone.id,
          kind: 'upload',
          albumId: null,
          assetIds: [],
          wrappedKey: null,
          sealKey: 'c2VhbA',
          maxBytes: null,
          acceptedBytes: 0,
          createdAt: NOW,
          expiresAt: null,
          revokedAt: null,
        });
        const late = await opened(p, gone.id, 9);
        const lateAsset = await stored(p, gone.id, hash(4), 9);
        expect(await p.erasure.eraseAccount(gone.id, POLICY, NOW + 1)).toEqual({
          ok: true,
          value: { erased: [gone.id], cancelledUploads: [late], purgedAssets: 1 },
        });
        expect((await p.links.findLink(linkIdHash))!.revokedAt).toBe(NOW + 1);
        expect(await p.quota.findAsset(lateAsset)).toBeNull();
        expect(await p.quota.readLedger(gone.id, NOW + 1)).toMatchObject({ reserved: 0 });
        expect(await p.erasure.eraseAccount(gone.id, POLICY, NOW + 2)).toEqual({
          ok: true,
          value: { erased: [gone.id], cancelledUploads: [], purgedAssets: 0 },
        });
      }));
  });
}
