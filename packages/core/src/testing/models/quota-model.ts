import fc from 'fast-check';
import { sha256Hex } from '../../encoding/bytes.js';
import { linkIdHash } from '../../links/link-id.js';
import { LinkService } from '../../links/service.js';
import type { LinkStore } from '../../ports/link-store.js';
import type { Ports } from '../../ports/ports.js';
import { admitAllWrites } from '../../ports/write-guard.js';
import { AssetService } from '../../assets/service.js';
import type { QuotaPolicy, QuotaState } from '../../quota/machine.js';
import { QuotaService } from '../../quota/service.js';
import { SponsorshipService } from '../../sponsorship/service.js';
import { freshSession } from '../recent-auth.js';
import { UploadService } from '../../upload/service.js';
import { FakeClock } from '../fake-clock.js';
import { MemoryBlobStore } from '../memory-blob-store.js';
import { SeededRandom } from '../seeded-random.js';
import { storedLink, testLinkId } from '../links.js';
import { testSecretBox } from '../secret-box.js';

/**
 * The quota ledger's model-based property, shared by every adapter: uploads, dedup, cancels,
 * expiry, trash, restore, purge, trash-empty, their provenance and metadata follow-ups, sweeps,
 * sponsored accounts, drops (directly and through a capped link with a guest token), federated
 * caching per peer, suspension and the clock, against a model; after every step the ledger must
 * agree with the model, equal the sum of each payer's blobs, and no cap, budget or hard limit may
 * be passed by a new reservation: a follow-up may pass the hard limit by the overdraft, and no
 * path but a metadata edit (admitted by state, spec §9.3) takes `used` past that line.
 */

/** A minimal assertion helper (core's testing code does not depend on a test runner). */
function expect(actual: unknown, what = 'value') {
  const fail = (msg: string): never => {
    throw new Error(`${what}: ${msg}`);
  };
  const show = (v: unknown): string => {
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  };
  const matches = (a: unknown, pattern: unknown): boolean => {
    if (pattern === null || typeof pattern !== 'object') return Object.is(a, pattern);
    if (a === null || typeof a !== 'object') return false;
    return Object.entries(pattern).every(([k, v]) => matches((a as Record<string, unknown>)[k], v));
  };
  return {
    toBe(expected: unknown): void {
      if (!Object.is(actual, expected)) fail(`expected ${show(expected)}, got ${show(actual)}`);
    },
    toMatchObject(pattern: Record<string, unknown>): void {
      if (!matches(actual, pattern)) fail(`expected to match ${show(pattern)}, got ${show(actual)}`);
    },
    toBeLessThanOrEqual(limit: number): void {
      if (!((actual as number) <= limit)) fail(`expected at most ${limit}, got ${show(actual)}`);
    },
    toBeGreaterThanOrEqual(limit: number): void {
      if (!((actual as number) >= limit)) fail(`expected at least ${limit}, got ${show(actual)}`);
    },
  };
}

// Small numbers so random runs cross every threshold and every clock boundary.
const SOFT = 600;
const HARD = 1000;
const GRACE = 60 * 60_000;
const TTL = 10 * 60_000;
const DROP_TTL = 30 * 60_000;
// Few enough open sessions per payer that runs reach the cap, which every kind of opening obeys.
const MAX_OPEN = 4;
/** Guest drops may hold only half of a payer's open-session places (rounded down). */
const MAX_OPEN_WITH_DROP = Math.floor(MAX_OPEN / 2);
// Follow-ups of a trash, restore, purge or trash-empty: a window the clock steps cross, and an overdraft
// smaller than most blobs, so runs reach it.
const FOLLOW_UP_MS = 10 * 60_000;
const OVERDRAFT = 150;
const POLICY: QuotaPolicy = {
  defaults: { soft: SOFT, hard: HARD },
  graceMs: GRACE,
  federatedShare: 0.25,
  maxOpenUploads: MAX_OPEN,
  followUpMs: FOLLOW_UP_MS,
  followUpOverdraft: OVERDRAFT,
};
/** What asset writes carry; the album guard is admitAllWrites here (its rules are tested with the album area). */
const ASSET_WRITE = { protocolVersion: '2026-06-01', intentId: null };
const SIZES = [40, 90, 150, 220, 310, 400];
const content = (i: number): Uint8Array => new Uint8Array(SIZES[i]!).fill(i + 1);
const HASHES = SIZES.map((_, i) => sha256Hex(content(i)));
// u0 pays for itself and for u2 (sponsored); u1 owns a web-upload link.
const USERS = [
  '0190c000-0000-7000-8000-000000000000',
  '0190c000-0000-7000-8000-000000000001',
  '0190c000-0000-7000-8000-000000000002',
];
const PAYER = [0, 1, 0];
const PAYERS = [0, 1];
// u1's web-upload link, with a cap of its own; federated peers and the per-peer budget (25 % of HARD).
const LINK = testLinkId(0x11);
const LINK_MAX = 1500;
const PEERS = ['https://peer-a.example', 'https://peer-b.example'];
const BUDGET = Math.floor(HARD * 0.25);
// Blobs that arrive from peers (the first of them also uploaded by users now and then, for merges).
const FED_SIZES = [40, 60, 110, 160, 230];
const fedContent = (i: number): Uint8Array => (i === 0 ? content(0) : new Uint8Array(FED_SIZES[i]!).fill(0xa0 + i));
const FED_HASHES = FED_SIZES.map((_, i) => sha256Hex(fedContent(i)));
/** The bytes behind every hash the model sends. */
const BYTES = new Map<string, Uint8Array>([
  ...SIZES.map((_, i) => [HASHES[i]!, content(i)] as const),
  ...FED_SIZES.map((_, i) => [FED_HASHES[i]!, fedContent(i)] as const),
]);

interface MSession {
  id: string;
  user: number;
  payer: number;
  hash: string;
  size: number;
  declared: number;
  state: 'open' | 'done' | 'cancelled';
  expiresAt: number;
  drop: boolean;
  /** A federated fill: the index of its source peer. */
  peer: number | null;
  /** A drop opened through the link: the guest's upload token. */
  token?: string;
  /** A provenance or metadata blob: the asset it is finalized into. */
  attachTo?: string;
  kind?: 'provenance' | 'metadata';
}
interface MAsset {
  id: string;
  owner: number;
  hashes: string[];
  /** Its metadata references (a metadata edit replaces them all with one). */
  metas: string[];
  state: 'live' | 'trashed' | 'drop' | 'gone';
  dropExpiresAt: number | null;
}
interface Model {
  now: number;
  blobs: Map<string, { size: number; payer: number; peer: number | null }>;
  /** Account ids by user index (sponsored accounts are appended as they are created) and who pays for each. */
  users: string[];
  payer: number[];
  /** Declared bytes of the drops opened through LINK. */
  linkAccepted: number;
  /** Federated cache references: payer \n peer \n hash. */
  fedRefs: Set<string>;
  /** The link was revoked: no drop opens through it, its tokens are refused. */
  linkRevoked: boolean;
  charged: number[];
  hardSince: (number | null)[];
  suspended: boolean[];
  sessions: MSession[];
  assets: MAsset[];
  metaCounter: number;
  /** By user index: when the user last trashed, restored, purged or emptied its trash (null: never). */
  trashAt: (number | null)[];
  /**
   * By payer: the most `used` may reach. Hard limit + overdraft, raised only by a metadata edit the
   * state admits (spec §9.3: metadata edits work below GraceExpired, whatever their size).
   */
  line: number[];
  /** The real charged figures after the previous step: nothing may be credited outside a sweep. */
  lastCharged: number[];
}
interface Real {
  clock: FakeClock;
  store: Ports['quota'];
  blobs: MemoryBlobStore;
  quota: QuotaService;
  uploads: UploadService;
  assets: AssetService;
  sponsorship: SponsorshipService;
  links: LinkService;
  linkStore: LinkStore;
}

const reserved = (m: Model, p: number): number =>
  m.sessions
    .filter((s) => s.payer === p && s.state === 'open' && m.now < s.expiresAt)
    .reduce((n, s) => n + s.declared, 0);
const used = (m: Model, p: number): number => m.charged[p]! + reserved(m, p);
/** The user trashed, restored, purged or emptied its trash within the follow-up window. */
const inFollowUpWindow = (m: Model, user: number): boolean =>
  m.trashAt[user] != null && m.now - m.trashAt[user]! <= FOLLOW_UP_MS;
function expectedState(m: Model, p: number): QuotaState {
  if (m.suspended[p]) return 'Suspended';
  const u = used(m, p);
  if (u >= HARD) return m.now - m.hardSince[p]! > GRACE ? 'GraceExpired' : 'HardExceeded';
  return u >= SOFT ? 'SoftWarning' : 'OK';
}
function charge(m: Model, hash: string, size: number, payer: number, peer: number | null = null): boolean {
  if (m.blobs.has(hash)) return false;
  m.blobs.set(hash, { size, payer, peer });
  m.charged[payer]! += size;
  return true;
}
const isOpen = (m: Model, s: MSession): boolean => s.state === 'open' && m.now < s.expiresAt;
/** The payer is at the cap on open sessions: any opening it pays for is refused, whatever its size. */
const atOpenCap = (m: Model, p: number, cap = MAX_OPEN): boolean =>
  m.sessions.filter((s) => s.payer === p && isOpen(m, s)).length >= cap;
const TOO_MANY = { ok: false, code: 'error.request.too_many' };

/** After every command: the real ledger agrees with the model, and nothing was credited outside a sweep. */
async function checkAll(m: Model, r: Real, sweep = false): Promise<void> {
  for (const p of PAYERS) {
    const u = used(m, p);
    m.hardSince[p] = u >= HARD ? (m.hardSince[p] ?? m.now) : null;
    const status = await r.quota.status(USERS[p]!);
    expect(status.used, `used of payer ${p}`).toBe(u);
    expect(status.reserved).toBe(reserved(m, p));
    expect(status.state, `state of payer ${p}`).toBe(expectedState(m, p));
    expect(status.graceExpiresAt).toBe(u >= HARD ? m.hardSince[p]! + GRACE : null);
    expect(u, `used of payer ${p} past hard limit + overdraft`).toBeLessThanOrEqual(m.line[p]!);
    const row = await r.store.readLedger(USERS[p]!, m.now);
    expect(row.charged, `charged of payer ${p}`).toBe(m.charged[p]);
    if (!sweep) expect(row.charged, 'credited outside a sweep').toBeGreaterThanOrEqual(m.lastCharged[p]!);
    m.lastCharged[p] = row.charged;
  }
  // A sponsored account sees (and spends) its sponsor's quota.
  for (let u = 2; u < m.users.length; u++) expect((await r.quota.status(m.users[u]!)).used).toBe(used(m, m.payer[u]!));
  // Each user's trash activity, as its own row records it (the evidence follow-ups are admitted on).
  for (let u = 0; u < m.users.length; u++)
    expect((await r.store.readLedger(m.users[u]!, m.now)).trashActivityAt, `trash activity of u${u}`).toBe(
      m.trashAt[u] ?? null,
    );
  // The ledger is exactly the sum of what each payer is charged for, blob by blob.
  for (const p of PAYERS) {
    const own = [...m.blobs.values()].filter((b) => b.payer === p).reduce((n, b) => n + b.size, 0);
    expect(own, `model blobs of payer ${p}`).toBe(m.charged[p]);
    const listed = (await r.store.listChargedBlobs(USERS[p]!)).reduce((n, b) => n + b.size, 0);
    expect(listed, `ledger blobs of payer ${p}`).toBe(m.charged[p]);
  }
  // The link's cap and every (payer, peer) budget hold.
  expect((await r.linkStore.findLink(linkIdHash(LINK)!))!.acceptedBytes).toBe(m.linkAccepted);
  expect(m.linkAccepted).toBeLessThanOrEqual(LINK_MAX);
  for (const p of PAYERS)
    for (let peer = 0; peer < PEERS.length; peer++)
      expect(cachedFrom(m, p, peer) + pendingFrom(m, p, peer)).toBeLessThanOrEqual(BUDGET);
}

const cachedFrom = (m: Model, p: number, peer: number): number =>
  [...m.blobs.values()].filter((b) => b.payer === p && b.peer === peer).reduce((n, b) => n + b.size, 0);
const pendingFrom = (m: Model, p: number, peer: number): number =>
  m.sessions.filter((s) => s.payer === p && s.peer === peer && isOpen(m, s)).reduce((n, s) => n + s.declared, 0);

/** Creates a session; on success the model reserves, whatever hash it announces; on refusal nothing changed. */
async function create(
  m: Model,
  r: Real,
  user: number,
  idx: number,
  slack: number,
  announce: boolean,
): Promise<MSession | null> {
  const hash = HASHES[idx]!;
  const declared = SIZES[idx]! + slack;
  const payer = m.payer[user]!;
  const before = used(m, payer);
  const res = await r.uploads.create(
    { accountId: m.users[user]!, ...(user >= USERS.length ? { actingOwnerId: USERS[payer]! } : {}) },
    {
      declaredSize: declared,
      kind: 'original',
      contentHash: announce ? hash : null,
      albumId: null,
      intentId: null,
      deviceId: 'd',
      protocolVersion: '2026-11-01',
    },
  );
  if (atOpenCap(m, payer)) {
    expect(res).toMatchObject(TOO_MANY);
    return null;
  }
  if (m.suspended[payer]) {
    expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    return null;
  }
  if (before + declared > HARD) {
    expect(res).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    return null;
  }
  if (!res.ok) throw new Error(`create refused: ${res.code}`);
  // Never Merged at creation: whether the hash is stored is learned only with the bytes.
  expect(res.value.state).toBe('Pending');
  const s: MSession = {
    id: res.value.uploadId,
    user,
    payer,
    hash,
    size: SIZES[idx]!,
    declared,
    state: 'open',
    expiresAt: m.now + TTL,
    drop: false,
    peer: null,
  };
  m.sessions.push(s);
  // Upload creation never takes used past the hard limit.
  expect(used(m, payer)).toBeLessThanOrEqual(HARD);
  return s;
}

/** PUT + finalize: a charge, or a merge when the bytes are stored already; a finalized session answers again as it is. */
async function finish(m: Model, r: Real, s: MSession): Promise<void> {
  const caller =
    s.token !== undefined
      ? await r.links.guest(s.token, s.id)
      : { accountId: m.users[s.user]!, ...(s.user >= USERS.length ? { actingOwnerId: USERS[s.payer]! } : {}) };
  if (s.token !== undefined && m.linkRevoked) {
    expect(caller, "a revoked link's upload token").toBe(null);
    return;
  }
  if (caller === null) throw new Error('the guest token was refused');
  const bytes = BYTES.get(s.hash)!;
  const manifest = s.attachTo === undefined ? null : { assetId: s.attachTo, intentId: null };
  const target = s.attachTo === undefined ? null : m.assets.find((a) => a.id === s.attachTo)!;
  if (s.state === 'done') {
    // Idempotent: the same bytes finalize again to the same answer, and nothing moves.
    const again = await r.uploads.finalize(caller, s.id, {
      protocolVersion: '2026-06-01',
      contentHash: s.hash,
      manifest,
    });
    expect(again.ok, 'a second finalize of a finalized session').toBe(true);
    return;
  }
  const put = await r.uploads.put(
    caller,
    s.id,
    (async function* () {
      yield bytes;
    })(),
    { protocolVersion: '2026-06-01' },
  );
  if (!isOpen(m, s)) {
    expect(put).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(
      await r.uploads.finalize(caller, s.id, { protocolVersion: '2026-06-01', contentHash: s.hash, manifest }),
    ).toMatchObject({ ok: false, code: 'error.conflict' });
    return;
  }
  expect(put.ok).toBe(true);
  const fin = await r.uploads.finalize(caller, s.id, { protocolVersion: '2026-06-01', contentHash: s.hash, manifest });
  if (target !== null && (target.state === 'gone' || target.state === 'drop')) {
    // Its asset was purged meanwhile: nothing lands, and the session stays open until it expires.
    expect(fin).toMatchObject({ ok: false, code: 'error.not_found' });
    return;
  }
  if (!fin.ok) throw new Error(`finalize refused: ${fin.code} ${fin.detail}`);
  const charged = charge(m, s.hash, s.size, s.payer, s.peer);
  expect(fin.value.state).toBe(charged ? 'Completed' : 'Merged');
  s.state = 'done';
  if (s.peer !== null) m.fedRefs.add(`${s.payer}\n${s.peer}\n${s.hash}`);
  else if (target !== null) (s.kind === 'metadata' ? target.metas : target.hashes).push(s.hash);
  else
    m.assets.push({
      id: s.id,
      owner: s.user,
      hashes: [s.hash],
      metas: [],
      state: s.drop ? 'drop' : 'live',
      dropExpiresAt: s.drop ? m.now + DROP_TTL : null,
    });
}

class Upload implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly user: number,
    readonly idx: number,
    readonly slack: number,
    readonly announce: boolean,
    readonly finishNow: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const s = await create(m, r, this.user % m.users.length, this.idx, this.slack, this.announce);
    if (s && this.finishNow) await finish(m, r, s);
    await checkAll(m, r);
  }
  toString = () =>
    `Upload(u${this.user}, #${this.idx}, +${this.slack}, ${this.announce ? 'hash' : 'nohash'}, ${this.finishNow ? 'finish' : 'open'})`;
}

class Finish implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    await finish(m, r, m.sessions[this.pick % m.sessions.length]!);
    await checkAll(m, r);
  }
  toString = () => `Finish(${this.pick})`;
}

class Cancel implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const s = m.sessions[this.pick % m.sessions.length]!;
    const res = await r.uploads.cancel(
      { accountId: m.users[s.user]!, ...(s.user >= USERS.length ? { actingOwnerId: USERS[s.payer]! } : {}) },
      s.id,
    );
    expect(res.ok).toBe(isOpen(m, s));
    if (res.ok) s.state = 'cancelled';
    await checkAll(m, r);
  }
  toString = () => `Cancel(${this.pick})`;
}

class Derivative implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly idx: number,
  ) {}
  check = (m: Readonly<Model>) => m.assets.some((a) => a.state === 'live');
  async run(m: Model, r: Real): Promise<void> {
    const live = m.assets.filter((a) => a.state === 'live');
    const a = live[this.pick % live.length]!;
    const hash = HASHES[this.idx]!;
    const payer = m.payer[a.owner]!;
    const res = await r.uploads.create(
      { accountId: m.users[a.owner]! },
      {
        declaredSize: SIZES[this.idx]!,
        kind: 'derivative',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'd',
        protocolVersion: '2026-11-01',
      },
    );
    if (atOpenCap(m, payer)) {
      expect(res).toMatchObject(TOO_MANY);
    } else if (m.suspended[payer] || used(m, payer) + SIZES[this.idx]! > HARD) {
      expect(res.ok).toBe(false);
    } else {
      if (!res.ok) throw new Error(res.code);
      const caller = { accountId: m.users[a.owner]! };
      expect(
        (
          await r.uploads.put(
            caller,
            res.value.uploadId,
            (async function* () {
              yield content(HASHES.indexOf(hash));
            })(),
            { protocolVersion: '2026-06-01' },
          )
        ).ok,
      ).toBe(true);
      const fin = await r.uploads.finalize(caller, res.value.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: hash,
        manifest: { assetId: a.id, intentId: null },
      });
      if (!fin.ok) throw new Error(fin.code);
      m.sessions.push({
        id: res.value.uploadId,
        user: a.owner,
        payer,
        hash,
        size: SIZES[this.idx]!,
        declared: SIZES[this.idx]!,
        state: 'done',
        expiresAt: m.now + TTL,
        drop: false,
        peer: null,
      });
      charge(m, hash, SIZES[this.idx]!, payer);
      a.hashes.push(hash);
    }
    await checkAll(m, r);
  }
  toString = () => `Derivative(${this.pick}, #${this.idx})`;
}

class Metadata implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly size: number,
  ) {}
  check = (m: Readonly<Model>) => m.assets.some((a) => a.state === 'live');
  async run(m: Model, r: Real): Promise<void> {
    const live = m.assets.filter((a) => a.state === 'live');
    const a = live[this.pick % live.length]!;
    const payer = m.payer[a.owner]!;
    const bytes = new Uint8Array(this.size).fill(0xee);
    new DataView(bytes.buffer).setUint32(0, ++m.metaCounter);
    const hash = sha256Hex(bytes);
    const delta = this.size - a.metas.reduce((n, h) => n + m.blobs.get(h)!.size, 0);
    const state = expectedState(m, payer);
    const before = used(m, payer);
    const res = await r.assets.replaceMetadata({ accountId: m.users[a.owner]! }, a.id, bytes, ASSET_WRITE);
    const byState = !(delta > 0 && (state === 'GraceExpired' || state === 'Suspended'));
    // GraceExpired growth is admitted only as a follow-up of the owner's trash activity, within the overdraft.
    const asFollowUp = state === 'GraceExpired' && inFollowUpWindow(m, a.owner) && before + delta <= HARD + OVERDRAFT;
    if (!byState && !asFollowUp) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    } else {
      expect(res.ok, `metadata edit (+${delta}) in ${state}`).toBe(true);
      charge(m, hash, this.size, payer);
      a.metas = [hash];
      if (byState) m.line[payer] = Math.max(m.line[payer]!, used(m, payer));
    }
    await checkAll(m, r);
  }
  toString = () => `Metadata(${this.pick}, ${this.size})`;
}

/**
 * A provenance or metadata blob for an asset in the library or the trash, as a client writes after a
 * delete or restore: past the hard limit only as a follow-up of its owner's trash activity, and
 * then within the overdraft; refused while suspended like every upload.
 */
class FollowUp implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly kind: 'provenance' | 'metadata',
    readonly idx: number,
    readonly finishNow: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.assets.some((a) => a.state === 'live' || a.state === 'trashed');
  async run(m: Model, r: Real): Promise<void> {
    const targets = m.assets.filter((a) => a.state === 'live' || a.state === 'trashed');
    const a = targets[this.pick % targets.length]!;
    const user = a.owner;
    const payer = m.payer[user]!;
    const declared = SIZES[this.idx]!;
    const before = used(m, payer);
    const caller = { accountId: m.users[user]!, ...(user >= USERS.length ? { actingOwnerId: USERS[payer]! } : {}) };
    const res = await r.uploads.create(caller, {
      declaredSize: declared,
      kind: this.kind,
      contentHash: null,
      albumId: null,
      intentId: null,
      deviceId: 'd',
      protocolVersion: '2026-11-01',
    });
    const followUp = inFollowUpWindow(m, user);
    if (atOpenCap(m, payer)) {
      expect(res).toMatchObject(TOO_MANY);
    } else if (m.suspended[payer]) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    } else if (before + declared > (followUp ? HARD + OVERDRAFT : HARD)) {
      expect(res, `${this.kind} of ${declared} at used ${before}${followUp ? ', a follow-up' : ''}`).toMatchObject({
        ok: false,
        code: 'error.quota.exceeded',
      });
    } else {
      if (!res.ok) throw new Error(`${this.kind} refused: ${res.code} (used ${before}, follow-up ${followUp})`);
      const s: MSession = {
        id: res.value.uploadId,
        user,
        payer,
        hash: HASHES[this.idx]!,
        size: declared,
        declared,
        state: 'open',
        expiresAt: m.now + TTL,
        drop: false,
        peer: null,
        attachTo: a.id,
        kind: this.kind,
      };
      m.sessions.push(s);
      expect(used(m, payer)).toBeLessThanOrEqual(followUp ? HARD + OVERDRAFT : HARD);
      if (this.finishNow) await finish(m, r, s);
    }
    await checkAll(m, r);
  }
  toString = () => `FollowUp(${this.pick}, ${this.kind}, #${this.idx}, ${this.finishNow ? 'finish' : 'open'})`;
}

/** What a client does on a delete, a restore or a trash-empty: the change, then its follow-up writes at once. */
class ChangeThenFollowUp implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly change: OnAsset | EmptyTrash,
    readonly followUps: readonly FollowUp[],
  ) {}
  check = (m: Readonly<Model>) => this.change.check(m);
  async run(m: Model, r: Real): Promise<void> {
    await this.change.run(m, r);
    for (const f of this.followUps) if (f.check(m)) await f.run(m, r);
  }
  toString = () => `${this.change.toString()}+[${this.followUps.map((f) => f.toString()).join(', ')}]`;
}

type AssetOp = 'trash' | 'restore' | 'purge' | 'adopt' | 'discard';
class OnAsset implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly op: AssetOp,
    readonly pick: number,
  ) {}
  check = (m: Readonly<Model>) => m.assets.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const a = m.assets[this.pick % m.assets.length]!;
    const caller = { accountId: m.users[a.owner]! };
    let res: { ok: boolean };
    let expected: boolean;
    switch (this.op) {
      case 'trash':
        res = await r.assets.trash(caller, a.id, ASSET_WRITE);
        expected = a.state === 'live';
        if (expected) a.state = 'trashed';
        break;
      case 'restore':
        res = await r.assets.restore(caller, a.id, ASSET_WRITE);
        expected = a.state === 'trashed';
        if (expected) a.state = 'live';
        break;
      case 'purge':
        res = await r.assets.purge(caller, a.id, ASSET_WRITE);
        expected = a.state === 'trashed';
        if (expected) a.state = 'gone';
        break;
      case 'adopt':
        res = await r.assets.adoptDrop(caller, a.id);
        expected = a.state === 'drop' && m.now < a.dropExpiresAt!;
        if (expected) a.state = 'live';
        break;
      case 'discard':
        res = await r.assets.discardDrop(caller, a.id);
        expected = a.state === 'drop';
        if (expected) a.state = 'gone';
        break;
    }
    expect(res.ok, `${this.op} of asset in state ${a.state}`).toBe(expected);
    // A trash, restore or purge that applied is the owner's trash activity (an adoption or a discard is not).
    if (expected && (this.op === 'trash' || this.op === 'restore' || this.op === 'purge')) m.trashAt[a.owner] = m.now;
    await checkAll(m, r);
  }
  toString = () => `${this.op}(${this.pick})`;
}

class EmptyTrash implements fc.AsyncCommand<Model, Real> {
  /** `user` null: the owner of the oldest asset in the trash (a trash the run has filled), if any. */
  constructor(readonly user: number | null) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    if (this.user === null) {
      const owner = m.assets.find((a) => a.state === 'trashed' && a.owner < USERS.length)?.owner;
      if (owner !== undefined) await new EmptyTrash(owner).run(m, r);
      return;
    }
    const mine = m.assets.filter((a) => a.owner === this.user && a.state === 'trashed');
    expect(await r.assets.emptyTrash({ accountId: USERS[this.user]! }, ASSET_WRITE)).toMatchObject({
      ok: true,
      value: mine.length,
    });
    for (const a of mine) a.state = 'gone';
    if (mine.length > 0) m.trashAt[this.user] = m.now;
    await checkAll(m, r);
  }
  toString = () => `EmptyTrash(${this.user === null ? 'a trash owner' : `u${this.user}`})`;
}

class Sweep implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    for (const a of m.assets) if (a.state === 'drop' && m.now >= a.dropExpiresAt!) a.state = 'gone';
    const referenced = new Set(m.assets.filter((a) => a.state !== 'gone').flatMap((a) => [...a.hashes, ...a.metas]));
    for (const ref of m.fedRefs) referenced.add(ref.split('\n')[2]!);
    const credited = [0, 0];
    for (const [hash, b] of [...m.blobs]) {
      if (referenced.has(hash)) continue;
      m.blobs.delete(hash);
      m.charged[b.payer]! -= b.size;
      credited[b.payer]! += b.size;
    }
    const report = await r.quota.sweep();
    for (const p of PAYERS) expect(report.credited[USERS[p]!] ?? 0, `credited to payer ${p}`).toBe(credited[p]);
    for (const hash of m.blobs.keys()) expect(await r.blobs.has(hash)).toBe(true);
    expect(r.blobs.blobs.size).toBe(m.blobs.size);
    await checkAll(m, r, true);
  }
  toString = () => 'Sweep';
}

class Suspend implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly payer: number,
    readonly on: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    if (this.on) await r.quota.suspend(USERS[this.payer]!);
    else await r.quota.unsuspend(USERS[this.payer]!);
    m.suspended[this.payer] = this.on;
    await checkAll(m, r);
  }
  toString = () => `${this.on ? 'Suspend' : 'Unsuspend'}(u${this.payer})`;
}

class AdvanceClock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
    await checkAll(m, r);
  }
  toString = () => `AdvanceClock(${this.ms})`;
}

class CreateSponsored implements fc.AsyncCommand<Model, Real> {
  constructor(readonly sponsor: number) {}
  check = (m: Readonly<Model>) => m.users.length < 6;
  async run(m: Model, r: Real): Promise<void> {
    const created = await r.sponsorship.create({ accountId: USERS[this.sponsor]! });
    if (!created.ok) throw new Error(created.code);
    m.users.push(created.value.accountId);
    m.payer.push(this.sponsor);
    m.trashAt.push(null);
    // Its sponsor may act as it; the other payer may not; it cannot sponsor in turn.
    expect(
      (await r.sponsorship.actAs({ accountId: USERS[this.sponsor]!, sessionId: 's' }, created.value.accountId)).ok,
    ).toBe(true);
    expect(
      await r.sponsorship.actAs({ accountId: USERS[1 - this.sponsor]!, sessionId: 's' }, created.value.accountId),
    ).toMatchObject({ ok: false, code: 'error.auth.not_an_owner' });
    expect(
      await r.sponsorship.create({ accountId: created.value.accountId, actingOwnerId: USERS[this.sponsor]! }),
    ).toMatchObject({ ok: false, code: 'error.sponsored.cannot_sponsor' });
    await checkAll(m, r);
  }
  toString = () => `CreateSponsored(by u${this.sponsor})`;
}

/** A guest's drop through u1's link: GraceExpired and Suspended refuse it, then the open-session cap, then the link cap and the hard limit. */
class LinkDrop implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly idx: number,
    readonly finishNow: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const declared = SIZES[this.idx]!;
    const state = expectedState(m, 1);
    const res = await r.links.openDrop(LINK, {
      declaredSize: declared,
      contentHash: null,
      protocolVersion: '2026-11-01',
    });
    if (m.linkRevoked) {
      expect(res).toMatchObject({ ok: false, code: 'error.not_found' });
    } else if (state === 'GraceExpired' || state === 'Suspended') {
      // Decided before the store is asked (the drop's quota state, LinkService.openDrop), so ahead of the open-session cap.
      expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    } else if (atOpenCap(m, 1, MAX_OPEN_WITH_DROP)) {
      expect(res).toMatchObject(TOO_MANY);
    } else if (m.linkAccepted + declared > LINK_MAX || used(m, 1) + declared > HARD) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    } else {
      if (!res.ok) throw new Error(`drop refused: ${res.code}`);
      m.linkAccepted += declared;
      const s: MSession = {
        id: res.value.uploadId,
        user: 1,
        payer: 1,
        hash: HASHES[this.idx]!,
        size: declared,
        declared,
        state: 'open',
        expiresAt: m.now + TTL,
        drop: true,
        peer: null,
        token: res.value.uploadToken,
      };
      m.sessions.push(s);
      expect(used(m, 1)).toBeLessThanOrEqual(HARD);
      if (this.finishNow) await finish(m, r, s);
    }
    await checkAll(m, r);
  }
  toString = () => `LinkDrop(#${this.idx}, ${this.finishNow ? 'finish' : 'open'})`;
}

/** The link owner adopts or discards a drop through the link service. */
class LinkDropOp implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly op: 'adopt' | 'discard',
    readonly pick: number,
  ) {}
  check = (m: Readonly<Model>) => m.sessions.some((s) => s.token !== undefined);
  async run(m: Model, r: Real): Promise<void> {
    const drops = m.sessions.filter((s) => s.token !== undefined);
    const s = drops[this.pick % drops.length]!;
    const a = m.assets.find((x) => x.id === s.id);
    const caller = { accountId: USERS[1]! };
    if (this.op === 'adopt') {
      const res = await r.links.adopt(caller, s.id, { intentId: null, protocolVersion: '2026-06-01' });
      const expected = a !== undefined && a.state === 'drop' && m.now < a.dropExpiresAt!;
      expect(res.ok, `adopt of drop ${s.state}/${a?.state}`).toBe(expected);
      if (expected) a!.state = 'live';
    } else {
      const res = await r.links.discard(caller, s.id);
      if (isOpen(m, s)) {
        expect(res.ok).toBe(true);
        s.state = 'cancelled';
      } else {
        const expected = a !== undefined && a.state === 'drop';
        expect(res.ok, `discard of drop ${s.state}/${a?.state}`).toBe(expected);
        if (expected) a!.state = 'gone';
      }
    }
    await checkAll(m, r);
  }
  toString = () => `LinkDrop.${this.op}(${this.pick})`;
}

/** The owner revokes u1's upload link: its drops still uploading are cancelled at once, finalized ones stay. */
class RevokeLink implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => !m.linkRevoked;
  async run(m: Model, r: Real): Promise<void> {
    expect((await r.links.revoke({ accountId: USERS[1]! }, LINK)).ok).toBe(true);
    m.linkRevoked = true;
    for (const s of m.sessions) if (s.token !== undefined && isOpen(m, s)) s.state = 'cancelled';
    await checkAll(m, r);
  }
  toString = () => 'RevokeLink';
}

/**
 * A blob from a peer, cached for a user (charged to its payer): an upload session like any other,
 * reserved at creation against the hard limit and within the per-peer budget; a made-up peer
 * (index PEERS.length) is refused outright.
 */
class Federated implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly user: number,
    readonly peer: number,
    readonly idx: number,
    readonly finishNow: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const user = this.user % m.users.length;
    const payer = m.payer[user]!;
    const hash = FED_HASHES[this.idx]!;
    const size = FED_SIZES[this.idx]!;
    const caller = { accountId: m.users[user]!, ...(user >= USERS.length ? { actingOwnerId: USERS[payer]! } : {}) };
    const peer = PEERS[this.peer] ?? 'https://made-up.example';
    const res = await r.uploads.create(caller, {
      kind: 'federated',
      sourcePeer: peer,
      declaredSize: size,
      contentHash: hash,
      albumId: null,
      intentId: null,
      deviceId: 'd',
      protocolVersion: '2026-11-01',
    });
    if (this.peer >= PEERS.length) {
      expect(res).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
    } else if (atOpenCap(m, payer)) {
      expect(res).toMatchObject(TOO_MANY);
    } else if (m.suspended[payer]) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    } else if (used(m, payer) + size > HARD) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    } else if (cachedFrom(m, payer, this.peer) + pendingFrom(m, payer, this.peer) + size > BUDGET) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.federated_budget' });
    } else {
      if (!res.ok) throw new Error(`federated refused: ${res.code}`);
      expect(res.value.state).toBe('Pending');
      const s: MSession = {
        id: res.value.uploadId,
        user,
        payer,
        hash,
        size,
        declared: size,
        state: 'open',
        expiresAt: m.now + TTL,
        drop: false,
        peer: this.peer,
      };
      m.sessions.push(s);
      expect(used(m, payer)).toBeLessThanOrEqual(HARD);
      if (this.finishNow) await finish(m, r, s);
    }
    await checkAll(m, r);
  }
  toString = () => `Federated(u${this.user}, peer ${this.peer}, #${this.idx}, ${this.finishNow ? 'finish' : 'open'})`;
}

/** Drops a receiver's federated reference: its bytes are credited at the next sweep, if nothing else holds them. */
class Evict implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.fedRefs.size > 0;
  async run(m: Model, r: Real): Promise<void> {
    const ref = [...m.fedRefs][this.pick % m.fedRefs.size]!;
    const [payer, peer, hash] = ref.split('\n');
    expect(await r.quota.evictFederated(USERS[Number(payer)]!, PEERS[Number(peer)]!, hash!)).toBe(true);
    m.fedRefs.delete(ref);
    await checkAll(m, r);
  }
  toString = () => `Evict(${this.pick})`;
}

function ledgerCommands(): fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] {
  const idx = fc.integer({ min: 0, max: SIZES.length - 1 });
  const followUp = fc
    .tuple(fc.nat(30), fc.constantFrom<'provenance' | 'metadata'>('provenance', 'metadata'), idx, fc.boolean())
    .map(([p, k, i, f]) => new FollowUp(p, k, i, f));
  return [
    fc
      .tuple(fc.integer({ min: 0, max: 2 }), idx, fc.integer({ min: 0, max: 60 }), fc.boolean(), fc.boolean())
      .map(([u, i, s, a, f]) => new Upload(u, i, s, a, f)),
    fc.nat(30).map((p) => new Finish(p)),
    fc.nat(30).map((p) => new Cancel(p)),
    fc.tuple(fc.nat(30), idx).map(([p, i]) => new Derivative(p, i)),
    fc.tuple(fc.nat(30), fc.integer({ min: 4, max: 120 })).map(([p, s]) => new Metadata(p, s)),
    fc
      .tuple(fc.constantFrom<AssetOp>('trash', 'restore', 'purge', 'adopt', 'discard'), fc.nat(30))
      .map(([op, p]) => new OnAsset(op, p)),
    followUp,
    ...[1, 2].map(() =>
      fc
        .tuple(
          fc.constantFrom<AssetOp | 'empty'>('trash', 'restore', 'purge', 'empty'),
          fc.nat(30),
          fc.array(followUp, { minLength: 1, maxLength: 3 }),
        )
        .map(([op, p, f]) => new ChangeThenFollowUp(op === 'empty' ? new EmptyTrash(null) : new OnAsset(op, p), f)),
    ),
    fc.integer({ min: 0, max: 2 }).map((u) => new EmptyTrash(u)),
    fc.constant(new Sweep()),
    fc.tuple(fc.integer({ min: 0, max: 1 }), fc.boolean()).map(([p, on]) => new Suspend(p, on)),
    fc
      .oneof(fc.integer({ min: 1, max: 120_000 }), fc.integer({ min: 5 * 60_000, max: 70 * 60_000 }))
      .map((ms) => new AdvanceClock(ms)),
    fc.integer({ min: 0, max: 1 }).map((p) => new CreateSponsored(p)),
    fc.tuple(idx, fc.boolean()).map(([i, f]) => new LinkDrop(i, f)),
    fc
      .tuple(fc.constantFrom<'adopt' | 'discard'>('adopt', 'discard'), fc.nat(30))
      .map(([op, p]) => new LinkDropOp(op, p)),
    ...[1, 2, 3].map(() =>
      fc
        .tuple(
          fc.nat(5),
          fc.integer({ min: 0, max: PEERS.length }),
          fc.integer({ min: 0, max: FED_SIZES.length - 1 }),
          fc.boolean(),
        )
        .map(([u, peer, i, f]) => new Federated(u, peer, i, f)),
    ),
    fc.constant(new RevokeLink()),
    fc.nat(30).map((p) => new Evict(p)),
    fc.nat(30).map((p) => new Evict(p)),
  ];
}

async function freshReal(ports: Ports): Promise<Real> {
  const clock = new FakeClock();
  const random = new SeededRandom(11);
  const store = ports.quota;
  const blobs = new MemoryBlobStore();
  const quota = new QuotaService({ ledger: store, blobs, clock, random, policy: POLICY });
  const uploads = new UploadService({
    sessions: store,
    assets: store,
    blobs,
    quota,
    writeGuard: admitAllWrites,
    clock,
    random,
    ttlMs: TTL,
    dropTtlMs: DROP_TTL,
    federationPeers: PEERS,
  });
  const assets = new AssetService({ assets: store, quota, sessions: store, writeGuard: admitAllWrites, clock });
  const sponsorship = new SponsorshipService({
    store: ports.sponsorship,
    accounts: ports.accounts,
    quota,
    clock,
    random,
    sessions: freshSession,
  });
  const sponsored = await sponsorship.setSponsor(USERS[2]!, USERS[0]!);
  if (!sponsored.ok) throw new Error('sponsor');
  const linkStore = ports.links;
  await linkStore.createLink(
    await storedLink(LINK, {
      ownerId: USERS[1]!,
      kind: 'upload',
      albumId: null,
      assetIds: [],
      wrappedKey: null,
      sealKey: 'c2VhbA',
      maxBytes: LINK_MAX,
      acceptedBytes: 0,
      createdAt: clock.now(),
      expiresAt: null,
      revokedAt: null,
    }),
  );
  const links = new LinkService({
    links: linkStore,
    writeGuard: admitAllWrites,
    sessions: store,
    catalog: store,
    uploads,
    assets,
    quota,
    clock,
    random,
    sealer: testSecretBox(),
    recentAuth: freshSession,
  });
  return { clock, store, blobs, quota, uploads, assets, sponsorship, links, linkStore };
}

/** The property over a fresh, empty port set per run (`makePorts` is called once per run). */
export function quotaModelProperty(
  makePorts: () => Promise<Ports>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>]> {
  return fc.asyncProperty(fc.commands(ledgerCommands(), { maxCommands: 60, size: 'max' }), async (cmds) => {
    const real = await freshReal(await makePorts());
    const model: Model = {
      now: real.clock.now(),
      blobs: new Map(),
      users: [...USERS],
      payer: [...PAYER],
      linkAccepted: 0,
      fedRefs: new Set(),
      linkRevoked: false,
      charged: [0, 0],
      hardSince: [null, null],
      suspended: [false, false],
      sessions: [],
      assets: [],
      metaCounter: 0,
      trashAt: USERS.map(() => null),
      line: PAYERS.map(() => HARD + OVERDRAFT),
      lastCharged: [0, 0],
    };
    await fc.asyncModelRun(() => ({ model, real }), cmds);
  });
}
