import fc from 'fast-check';
import { toBase64url } from '../../encoding/bytes.js';
import { uuidv7 } from '../../encoding/uuid.js';
import { linkIdHash, sealLinkId } from '../../links/link-id.js';
import type { AccountRecord } from '../../ports/account-store.js';
import type { Ports } from '../../ports/ports.js';
import type { QuotaPolicy } from '../../quota/machine.js';
import { SyncService, type SyncPageChange } from '../../sync/service.js';
import { FakeClock } from '../fake-clock.js';
import { testSecretBox } from '../secret-box.js';
import { SeededRandom } from '../seeded-random.js';
import { expect } from './check.js';

const DAY = 86_400_000;
const TOMBSTONE_DAYS = 1;
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

/** What a client holds of one object after replaying pages: the fields a write can change. */
type Held = string;
interface ModelAsset {
  state: 'live' | 'trashed';
  albumId: string | null;
  metadata: string | null;
}
interface ModelAccount {
  albums: string[];
  assets: Map<string, ModelAsset>;
  /** Link id -> revoked. */
  links: Map<string, boolean>;
}
interface Client {
  account: number;
  /** How the client authenticates: as the account itself, or (for the sponsored account) an owner acting as it. */
  acting: boolean;
  cursor: string | null;
  issuedAt: number;
  /** A prune ran since the client's listing began: a removal it had not reached may be gone, and then its cursor is refused. */
  pruned: boolean;
  replica: Map<string, Held>;
}
interface Model {
  now: number;
  accounts: ModelAccount[];
  clients: Client[];
  n: number;
}
interface Real {
  ports: Ports;
  clock: FakeClock;
  sync: SyncService;
  ids: string[];
}

/** The model's own reading of what a client holds of the account: every live object, as GET would answer it. */
function truth(m: Model, account: number): Map<string, Held> {
  const a = m.accounts[account]!;
  const out = new Map<string, Held>();
  for (const albumId of a.albums) {
    const count = [...a.assets.values()].filter((x) => x.albumId === albumId && x.state === 'live').length;
    out.set(`album:${albumId}`, `count=${count}`);
  }
  for (const [id, x] of a.assets) out.set(`asset:${id}`, `${x.state} album=${x.albumId} metadata=${x.metadata}`);
  for (const [id, revoked] of a.links) if (!revoked) out.set(`link:${id}`, 'link');
  return out;
}

function held(c: SyncPageChange): Held {
  if (c.kind === 'album') return `count=${c.record!.assetCount}`;
  if (c.kind === 'asset')
    return `${c.record!.state} album=${c.record!.albumId} metadata=${c.record!.blobs.find((b) => b.kind === 'metadata')?.contentHash ?? null}`;
  return 'link';
}

const hash = (i: number): string => i.toString(16).padStart(64, '0');

abstract class Write implements fc.AsyncCommand<Model, Real> {
  constructor(readonly account: number) {}
  check = () => true;
  abstract apply(m: Model, r: Real, accountId: string): Promise<void>;
  async run(m: Model, r: Real): Promise<void> {
    m.now += 1;
    r.clock.set(m.now);
    await this.apply(m, r, r.ids[this.account]!);
  }
}

class CreateAlbum extends Write {
  async apply(m: Model, r: Real, accountId: string): Promise<void> {
    const id = uuidv7(m.now, new SeededRandom(++m.n).bytes(10));
    await r.ports.albums.createAlbum({ id, accountId, protocolVersion: '2026-01-01', createdAt: m.now, upgrade: null });
    m.accounts[this.account]!.albums.push(id);
  }
  toString = () => `CreateAlbum(${this.account})`;
}

class CreateAsset extends Write {
  constructor(
    account: number,
    readonly album: number | null,
  ) {
    super(account);
  }
  async apply(m: Model, r: Real, accountId: string): Promise<void> {
    const a = m.accounts[this.account]!;
    const albumId = this.album === null || a.albums.length === 0 ? null : a.albums[this.album % a.albums.length]!;
    const id = uuidv7(m.now, new SeededRandom(++m.n).bytes(10));
    const opened = await r.ports.quota.openUpload(
      {
        id,
        uploaderId: accountId,
        kind: 'original',
        declaredSize: 10,
        contentHash: null,
        sourcePeer: null,
        albumId,
        intentId: null,
        dropLinkIdHash: null,
        createdAt: m.now,
        expiresAt: m.now + DAY * 10,
      },
      POLICY,
      m.now,
    );
    expect(opened.ok, 'opening an upload').toBe(true);
    const done = await r.ports.quota.completeUpload(
      {
        uploadId: id,
        contentHash: hash(++m.n),
        size: 10,
        asset: { create: { id, ownerId: accountId, dropExpiresAt: null } },
      },
      POLICY,
      m.now,
    );
    expect(typeof done === 'string' ? done : done.outcome, 'finalize').toBe('completed');
    a.assets.set(id, { state: 'live', albumId, metadata: null });
  }
  toString = () => `CreateAsset(${this.account}, album ${this.album})`;
}

type Step = 'trash' | 'restore' | 'purge' | 'metadata';
class AssetStep extends Write {
  constructor(
    account: number,
    readonly pick: number,
    readonly step: Step,
  ) {
    super(account);
  }
  async apply(m: Model, r: Real, _accountId: string): Promise<void> {
    const a = m.accounts[this.account]!;
    const ids = [...a.assets.keys()];
    if (ids.length === 0) return;
    const id = ids[this.pick % ids.length]!;
    const x = a.assets.get(id)!;
    if (this.step === 'metadata') {
      const h = hash(++m.n);
      const done = await r.ports.quota.replaceMetadata(
        { assetId: id, accountId: r.ids[this.account]!, contentHash: h, size: 5 },
        POLICY,
        m.now,
      );
      expect(done.ok, 'metadata replace').toBe(x.state === 'live');
      if (done.ok) x.metadata = h;
      return;
    }
    const expected = this.step === 'trash' ? x.state === 'live' : x.state === 'trashed';
    const done =
      this.step === 'trash'
        ? await r.ports.quota.trashAsset(id, m.now)
        : this.step === 'restore'
          ? await r.ports.quota.restoreAsset(id, m.now)
          : await r.ports.quota.purgeAsset(id, m.now);
    expect(done, `${this.step} of a ${x.state} asset`).toBe(expected);
    if (!done) return;
    if (this.step === 'purge') a.assets.delete(id);
    else x.state = this.step === 'trash' ? 'trashed' : 'live';
  }
  toString = () => `${this.step}(${this.account}, #${this.pick})`;
}

class CreateLink extends Write {
  async apply(m: Model, r: Real, accountId: string): Promise<void> {
    const a = m.accounts[this.account]!;
    const random = new SeededRandom(++m.n);
    const linkId = toBase64url(random.bytes(16));
    const idHash = linkIdHash(linkId)!;
    await r.ports.links.createLink({
      idHash,
      sealedId: await sealLinkId(testSecretBox(), linkId, idHash),
      ownerId: accountId,
      kind: 'share',
      albumId: a.albums[0] ?? null,
      assetIds: [],
      wrappedKey: 'a2V5',
      sealKey: null,
      maxBytes: null,
      acceptedBytes: 0,
      createdAt: m.now,
      expiresAt: null,
      revokedAt: null,
    });
    a.links.set(linkId, false);
  }
  toString = () => `CreateLink(${this.account})`;
}

class RevokeLink extends Write {
  constructor(
    account: number,
    readonly pick: number,
  ) {
    super(account);
  }
  async apply(m: Model, r: Real, accountId: string): Promise<void> {
    const a = m.accounts[this.account]!;
    const ids = [...a.links.keys()];
    if (ids.length === 0) return;
    const linkId = ids[this.pick % ids.length]!;
    const done = await r.ports.quota.revokeLink(accountId, linkIdHash(linkId)!, POLICY, m.now);
    expect(done.revoked, 'revoke').toBe(!a.links.get(linkId));
    a.links.set(linkId, true);
  }
  toString = () => `RevokeLink(${this.account}, #${this.pick})`;
}

/** A client reads its next page: it applies the changes, and once the log has no more, holds exactly the account's live state. */
class ReadPage implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly client: number,
    readonly limit: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const c = m.clients[this.client]!;
    const accountId = r.ids[c.account]!;
    // An owner acting as the sponsored account reads as that account (what X-Svc-Act-As resolves to).
    const principal = c.acting ? { accountId, actingOwnerId: r.ids[0]! } : { accountId };
    const got = await r.sync.page(principal, c.cursor, this.limit);
    const expired = c.cursor !== null && c.issuedAt < m.now - TOMBSTONE_DAYS * DAY;
    if (!got.ok) {
      expect(got.code, 'a refused page').toBe('error.sync.cursor_expired');
      expect(expired || c.pruned, 'a cursor within the horizon refused with no prune since its listing began').toBe(
        true,
      );
      // The client starts again without a cursor, as docs/api.md says.
      c.cursor = null;
      c.pruned = false;
      c.replica = new Map();
      return;
    }
    expect(expired, 'a cursor older than the horizon accepted').toBe(false);
    expect(got.value.changes.length <= this.limit, 'page within its limit').toBe(true);
    const seen = new Set<string>();
    for (const ch of got.value.changes) {
      const key = `${ch.kind}:${ch.id}`;
      expect(seen.has(key), `${key} twice on one page`).toBe(false);
      seen.add(key);
      if (ch.op === 'remove') c.replica.delete(key);
      else c.replica.set(key, held(ch));
    }
    c.cursor = got.value.cursor;
    c.issuedAt = m.now;
    if (!got.value.hasMore)
      expect(Object.fromEntries(c.replica), `client ${this.client}'s replica`).toEqual(
        Object.fromEntries(truth(m, c.account)),
      );
  }
  toString = () => `ReadPage(client ${this.client}, limit ${this.limit})`;
}

/** A client forgets its cursor and lists from the start (a new device). */
class Restart implements fc.AsyncCommand<Model, Real> {
  constructor(readonly client: number) {}
  check = () => true;
  async run(m: Model): Promise<void> {
    const c = m.clients[this.client]!;
    c.cursor = null;
    c.pruned = false;
    c.replica = new Map();
  }
  toString = () => `Restart(client ${this.client})`;
}

/** Time passes (sometimes past the tombstone horizon) and the GC prunes old tombstones. */
class AdvanceAndPrune implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly ms: number,
    readonly prune: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.set(m.now);
    if (this.prune) {
      await r.sync.prune();
      for (const c of m.clients) if (c.cursor !== null) c.pruned = true;
    }
  }
  toString = () => `Advance(${this.ms}${this.prune ? ', prune' : ''})`;
}

/**
 * Library sync (spec §13.1 to §13.4), model-based over one adapter's stores: any
 * interleaving of writes to two accounts (one sponsored by the other; the sponsored one's clients
 * are partly its owner acting as it) and page reads by clients from any cursor, with time passing
 * the tombstone horizon and prunes. A client that has read to the end of its log holds exactly the
 * account's live objects, as GET answers them now. A cursor older than the horizon is refused
 * (410); a younger one only when a prune since its listing began may have taken a removal it had
 * not reached. The client then starts again.
 */
export function syncModelProperty(
  fresh: () => Promise<Ports>,
): fc.IAsyncPropertyWithHooks<[readonly fc.AsyncCommand<Model, Real>[]]> {
  const account = fc.integer({ min: 0, max: 1 });
  const client = fc.integer({ min: 0, max: 3 });
  const commands = [
    account.map((a) => new CreateAlbum(a)),
    fc.tuple(account, fc.option(fc.nat(3))).map(([a, al]) => new CreateAsset(a, al)),
    fc
      .tuple(account, fc.nat(20), fc.constantFrom<Step>('trash', 'restore', 'purge', 'metadata'))
      .map(([a, p, s]) => new AssetStep(a, p, s)),
    account.map((a) => new CreateLink(a)),
    fc.tuple(account, fc.nat(5)).map(([a, p]) => new RevokeLink(a, p)),
    fc
      .tuple(client, fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 4 }), fc.constant(1000)))
      .map(([c, l]) => new ReadPage(c, l)),
    fc
      .tuple(client, fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 4 }), fc.constant(1000)))
      .map(([c, l]) => new ReadPage(c, l)),
    client.map((c) => new Restart(c)),
    fc
      .tuple(
        fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constant(Math.floor(DAY * 0.6)), fc.constant(DAY + 1)),
        fc.boolean(),
      )
      .map(([ms, p]) => new AdvanceAndPrune(ms, p)),
  ];
  return fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'max' }), async (cmds) => {
    const ports = await fresh();
    const clock = new FakeClock(1_800_000_000_000);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const id = uuidv7(clock.now(), new SeededRandom(1_000 + i).bytes(10));
      const record: AccountRecord = {
        id,
        address: `sync${i}-${id}@example.org`,
        addressKey: `sync${i}-${id}@example.org`,
        passwordHash: 'hash',
        displayName: null,
        createdAt: clock.now(),
        lockedAt: null,
        credentialsChangedAt: null,
      };
      await ports.accounts.createAccount(record);
      ids.push(id);
    }
    // The second account is sponsored by the first: its uploads are charged to its owner.
    expect((await ports.sponsorship.setSponsor(ids[1]!, ids[0]!)).ok, 'sponsor').toBe(true);
    const sync = new SyncService({
      log: ports.sync,
      links: ports.links,
      clock,
      sealer: testSecretBox(),
      tombstoneDays: TOMBSTONE_DAYS,
    });
    const model: Model = {
      now: clock.now(),
      accounts: [0, 1].map(() => ({ albums: [], assets: new Map(), links: new Map() })),
      clients: [
        { account: 0, acting: false },
        { account: 0, acting: false },
        { account: 1, acting: false },
        { account: 1, acting: true },
      ].map((c) => ({ ...c, cursor: null, issuedAt: 0, pruned: false, replica: new Map() })),
      n: 0,
    };
    await fc.asyncModelRun(() => ({ model, real: { ports, clock, sync, ids } }), cmds);
  }) as never;
}
