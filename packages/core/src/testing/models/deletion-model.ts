import fc from 'fast-check';
import type { AccountRecord } from '../../ports/account-store.js';
import type { Ports } from '../../ports/ports.js';
import type { SessionRecord } from '../../ports/session-ledger.js';
import type { QuotaPolicy } from '../../quota/machine.js';
import { sponsoredAddressKey } from '../../sponsorship/service.js';
import { expect } from './check.js';

/**
 * "Deletion loses nothing else", shared by every adapter: accounts upload (sharing blobs by
 * dedup), sponsor, co-own, open drops through their links, trash, open sessions; then any live
 * account is deleted, in whatever state it is. Every other account must then read exactly what it
 * read before (its ledger, sessions, links, assets, the uploads it makes and pays for, the blobs
 * its assets hold, the sponsored accounts it owns), but for what the deletion is documented to
 * change: the deleted account's uploads it paid for are cancelled (their reservation released), the
 * deleted accounts leave the owners of what it owns. The next sweep credits exactly the blobs that
 * only deleted accounts' assets held, each to whoever the ledger charged for it.
 */

const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};
const NOW = 5_000;
const FAR = 1_000_000_000;
/** A handful of blobs, so accounts share them often: blob i has one hash and one size everywhere. */
const BLOBS = [0, 1, 2, 3, 4].map((i) => ({ hash: `d${i}`.padEnd(64, String(i)), size: 100 * (i + 1) }));

interface ModelUpload {
  readonly uploader: string;
  readonly payer: string;
  readonly size: number;
  open: boolean;
}
interface Model {
  /** Accounts not deleted, registered ones first, in creation order. */
  live: string[];
  readonly registered: Set<string>;
  /** Sponsored account -> its sponsor. */
  readonly sponsorOf: Map<string, string>;
  readonly uploads: Map<string, ModelUpload>;
  /** Asset -> its owner and blob. */
  readonly assets: Map<string, { owner: string; hash: string }>;
  /** The one upload link of an owner. */
  readonly links: Map<string, string>;
  seq: number;
}

const pick = <T>(list: readonly T[], i: number): T | undefined =>
  list.length === 0 ? undefined : list[i % list.length];
const uid = (m: Model, prefix: string): string =>
  `${prefix}${String(++m.seq).padStart(8, '0')}-0000-7000-8000-000000000000`;
const payerOf = (m: Model, account: string): string => m.sponsorOf.get(account) ?? account;

async function upload(
  m: Model,
  p: Ports,
  uploader: string,
  blob: number,
  complete: boolean,
  drop: string | null,
): Promise<void> {
  const { hash, size } = BLOBS[blob]!;
  const id = uid(m, 'u');
  const opened =
    drop === null
      ? await p.quota.openUpload(
          {
            id,
            uploaderId: uploader,
            kind: 'original',
            declaredSize: size,
            contentHash: null,
            sourcePeer: null,
            albumId: null,
            intentId: null,
            dropLinkIdHash: null,
            createdAt: NOW,
            expiresAt: FAR,
          },
          POLICY,
          NOW,
        )
      : await p.quota.openDrop(
          {
            id,
            uploaderId: uploader,
            kind: 'original',
            declaredSize: size,
            contentHash: null,
            sourcePeer: null,
            albumId: null,
            intentId: null,
            dropLinkIdHash: drop,
            createdAt: NOW,
            expiresAt: FAR,
          },
          `${id}`.padEnd(64, '0'),
          POLICY,
          NOW,
        );
  expect(opened.ok, `opening ${id}`).toBe(true);
  const entry: ModelUpload = { uploader, payer: payerOf(m, uploader), size, open: true };
  m.uploads.set(id, entry);
  if (!complete) return;
  const done = await p.quota.completeUpload(
    {
      uploadId: id,
      contentHash: hash,
      size,
      asset: { create: { id, ownerId: uploader, dropExpiresAt: drop === null ? null : FAR } },
    },
    POLICY,
    NOW,
  );
  expect(typeof done === 'string' ? done : 'done', `completing ${id}`).toBe('done');
  entry.open = false;
  m.assets.set(id, { owner: uploader, hash });
}

/** The live accounts a command picks from: any, or (to reach them often) sponsored ones only. */
const among = (m: Model, sponsoredOnly: boolean): string[] =>
  sponsoredOnly ? m.live.filter((a) => m.sponsorOf.has(a)) : m.live;

class Upload implements fc.AsyncCommand<Model, Ports> {
  constructor(
    readonly who: number,
    readonly blob: number,
    readonly complete: boolean,
    readonly sponsoredOnly: boolean,
  ) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const uploader = pick(among(m, this.sponsoredOnly), this.who);
    if (uploader !== undefined) await upload(m, p, uploader, this.blob, this.complete, null);
  }
  toString = () =>
    `Upload(${this.sponsoredOnly ? 'sponsored ' : ''}${this.who}, blob ${this.blob}${this.complete ? ', finalized' : ''})`;
}

class Drop implements fc.AsyncCommand<Model, Ports> {
  constructor(
    readonly owner: number,
    readonly blob: number,
    readonly complete: boolean,
  ) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const owner = pick(
      [...m.live].filter((a) => m.registered.has(a)),
      this.owner,
    );
    if (owner === undefined) return;
    let link = m.links.get(owner);
    if (link === undefined) {
      link = uid(m, 'l').padEnd(64, 'a');
      await p.links.createLink({
        idHash: link,
        sealedId: 'v1.x.sealed',
        ownerId: owner,
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
      m.links.set(owner, link);
    }
    await upload(m, p, owner, this.blob, this.complete, link);
  }
  toString = () => `Drop(${this.owner}, blob ${this.blob}${this.complete ? ', finalized' : ''})`;
}

class Sponsor implements fc.AsyncCommand<Model, Ports> {
  constructor(readonly sponsor: number) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const sponsor = pick(
      [...m.live].filter((a) => m.registered.has(a)),
      this.sponsor,
    );
    if (sponsor === undefined) return;
    const id = uid(m, 's');
    const account: AccountRecord = {
      id,
      address: null,
      addressKey: sponsoredAddressKey(id),
      passwordHash: null,
      displayName: null,
      createdAt: NOW,
      lockedAt: null,
      credentialsChangedAt: null,
    };
    expect((await p.sponsorship.createSponsoredAccount({ account, sponsorId: sponsor })).ok, 'sponsoring').toBe(true);
    m.sponsorOf.set(id, sponsor);
    m.live.push(id);
  }
  toString = () => `Sponsor(${this.sponsor})`;
}

class CoOwn implements fc.AsyncCommand<Model, Ports> {
  constructor(
    readonly kid: number,
    readonly owner: number,
  ) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const kid = pick(
      [...m.live].filter((a) => m.sponsorOf.has(a)),
      this.kid,
    );
    const owner = pick(
      [...m.live].filter((a) => m.registered.has(a)),
      this.owner,
    );
    if (kid !== undefined && owner !== undefined)
      expect(await p.sponsorship.addOwner(kid, owner, NOW), 'adding an owner').toBe(true);
  }
  toString = () => `CoOwn(${this.kid}, ${this.owner})`;
}

class Trash implements fc.AsyncCommand<Model, Ports> {
  constructor(readonly asset: number) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const asset = pick([...m.assets.keys()], this.asset);
    if (asset !== undefined) await p.quota.trashAsset(asset, NOW);
  }
  toString = () => `Trash(${this.asset})`;
}

class SignIn implements fc.AsyncCommand<Model, Ports> {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const who = pick(
      [...m.live].filter((a) => m.registered.has(a)),
      this.who,
    );
    if (who === undefined) return;
    const id = uid(m, 'e');
    const session: SessionRecord = {
      id,
      accountId: who,
      tokenHash: id,
      cohortHash: null,
      createdAt: NOW,
      refreshedAt: NOW,
      lastUsedAt: NOW,
      accessFloor: NOW,
      closedAt: null,
      authenticatedAt: NOW,
      method: 'password',
    };
    expect(await p.accounts.openSession(session, null), 'opening a session').toBe(true);
  }
  toString = () => `SignIn(${this.who})`;
}

/** Everything the survivors read, as plain values. */
async function survivorsView(m: Model, p: Ports, survivors: ReadonlySet<string>) {
  const accounts: Record<string, unknown> = {};
  for (const id of [...survivors].sort()) {
    accounts[id] = {
      ledger: await p.quota.readLedger(id, NOW),
      sessions: await p.accounts.listOpenSessions(id),
      links: await p.links.listLinks(id),
      owned: await p.sponsorship.listOwnedBy(id),
      record: await p.sponsorship.findSponsored(id),
      sync: await p.sync.readSync(id, 0, 1_000),
    };
  }
  const assets: Record<string, unknown> = {};
  const blobs: Record<string, unknown> = {};
  for (const [id, a] of [...m.assets].sort()) {
    if (!survivors.has(a.owner)) continue;
    assets[id] = await p.quota.findAsset(id);
    blobs[a.hash] = await p.quota.findBlob(a.hash);
  }
  const uploads: Record<string, unknown> = {};
  for (const [id, u] of [...m.uploads].sort())
    if (survivors.has(u.uploader) && survivors.has(u.payer)) uploads[id] = await p.quota.findUpload(id);
  return { accounts, assets, blobs, uploads };
}

type View = Awaited<ReturnType<typeof survivorsView>>;
type Ledger = { charged: number; reserved: number };
type Owned = { accountId: string; owners: string[] };

class Delete implements fc.AsyncCommand<Model, Ports> {
  constructor(
    readonly who: number,
    readonly sponsoredOnly = false,
  ) {}
  check = () => true;
  async run(m: Model, p: Ports): Promise<void> {
    const target = pick(among(m, this.sponsoredOnly), this.who);
    if (target === undefined) return;
    const erased = new Set([
      target,
      ...[...m.sponsorOf].filter(([kid, sponsor]) => sponsor === target && m.live.includes(kid)).map(([kid]) => kid),
    ]);
    const survivors = new Set(m.live.filter((a) => !erased.has(a)));
    // Nothing is garbage before the deletion, so what the next sweep takes is the deletion's doing.
    await p.quota.sweep(POLICY, NOW);
    const before = await survivorsView(m, p, survivors);
    const charges = new Map<string, { size: number; chargedTo: string }>();
    for (const { hash } of m.assets.values()) {
      const b = await p.quota.findBlob(hash);
      if (b !== null) charges.set(hash, { size: b.size, chargedTo: b.chargedTo });
    }

    const done = await p.erasure.eraseAccount(target, POLICY, NOW);
    expect(done.ok, `deleting ${target}`).toBe(true);
    expect(done.ok && [...done.value.erased].sort(), 'the accounts deleted').toEqual([...erased].sort());
    // Again: it finds nothing left, and changes nothing for anyone.
    expect(await p.erasure.eraseAccount(target, POLICY, NOW), 'deleting it again').toEqual({
      ok: true,
      value: { erased: [target], cancelledUploads: [], purgedAssets: 0 },
    });

    // What the deletion is documented to change for the survivors, and nothing else.
    const released = new Map<string, number>();
    for (const u of m.uploads.values()) {
      if (!u.open || !(erased.has(u.uploader) || erased.has(u.payer))) continue;
      u.open = false;
      released.set(u.payer, (released.get(u.payer) ?? 0) + u.size);
    }
    const expected = structuredClone(before) as View;
    for (const [id, view] of Object.entries(expected.accounts) as [
      string,
      { ledger: Ledger; owned: Owned[]; record: Owned | null },
    ][]) {
      view.ledger.reserved -= released.get(id) ?? 0;
      view.owned = view.owned
        .filter((r) => !erased.has(r.accountId))
        .map((r) => ({ ...r, owners: r.owners.filter((o) => !erased.has(o)) }));
      if (view.record !== null)
        view.record = { ...view.record, owners: view.record.owners.filter((o) => !erased.has(o)) };
    }
    expect(await survivorsView(m, p, survivors), `the survivors after deleting ${target}`).toEqual(expected);

    // The sweep takes exactly the blobs only deleted accounts held, crediting whoever was charged.
    const held = new Set([...m.assets.values()].filter((a) => survivors.has(a.owner)).map((a) => a.hash));
    const gone = [...charges.keys()].filter((h) => !held.has(h)).sort();
    const swept = await p.quota.sweep(POLICY, NOW);
    expect(swept.swept.map((b) => b.contentHash).sort(), 'the blobs swept').toEqual(gone);
    for (const b of swept.swept)
      expect(b.chargedTo, `who is credited for ${b.contentHash}`).toBe(charges.get(b.contentHash)!.chargedTo);
    const credit = new Map<string, number>();
    for (const h of gone)
      credit.set(charges.get(h)!.chargedTo, (credit.get(charges.get(h)!.chargedTo) ?? 0) + charges.get(h)!.size);
    for (const id of survivors) {
      const was = (expected.accounts[id] as { ledger: Ledger }).ledger;
      expect(await p.quota.readLedger(id, NOW), `${id}'s ledger after the sweep`).toMatchObject({
        charged: was.charged - (credit.get(id) ?? 0),
        reserved: was.reserved,
      });
    }
    for (const h of held) expect(await p.quota.findBlob(h), `blob ${h} a survivor holds`).toEqual(before.blobs[h]);

    m.live = m.live.filter((a) => !erased.has(a));
    for (const [id, a] of m.assets) if (erased.has(a.owner)) m.assets.delete(id);
  }
  toString = () => `Delete(${this.sponsoredOnly ? 'sponsored ' : ''}${this.who})`;
}

export function deletionModelProperty(
  fresh: () => Promise<Ports>,
): fc.IAsyncPropertyWithHooks<[readonly fc.AsyncCommand<Model, Ports>[]]> {
  const who = fc.nat({ max: 7 });
  const blob = fc.nat({ max: BLOBS.length - 1 });
  const commands = [
    fc.tuple(who, blob, fc.boolean(), fc.boolean()).map(([w, b, c, s]) => new Upload(w, b, c, s)),
    fc.tuple(who, blob, fc.boolean()).map(([w, b, c]) => new Drop(w, b, c)),
    who.map((w) => new Sponsor(w)),
    fc.tuple(who, who).map(([k, o]) => new CoOwn(k, o)),
    fc.nat({ max: 20 }).map((a) => new Trash(a)),
    who.map((w) => new SignIn(w)),
    fc.tuple(who, fc.boolean()).map(([w, s]) => new Delete(w, s)),
  ];
  return fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
    const p = await fresh();
    const model: Model = {
      live: [],
      registered: new Set(),
      sponsorOf: new Map(),
      uploads: new Map(),
      assets: new Map(),
      links: new Map(),
      seq: 0,
    };
    for (const label of ['ann', 'bob', 'cat']) {
      const id = uid(model, 'a');
      const address = `${label}@example.org`;
      expect(
        await p.accounts.createAccount({
          id,
          address,
          addressKey: address,
          passwordHash: 'hash',
          displayName: null,
          createdAt: NOW,
          lockedAt: null,
          credentialsChangedAt: null,
        }),
        'creating an account',
      ).toBe('created');
      model.registered.add(id);
      model.live.push(id);
    }
    await fc.asyncModelRun(() => ({ model, real: p }), [...cmds, new Delete(0)]);
  }) as never;
}
