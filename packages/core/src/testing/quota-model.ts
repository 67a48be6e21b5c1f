import fc from 'fast-check';
import { sha256Hex } from '../encoding/bytes.js';
import type { Ports } from '../ports/ports.js';
import { admitAllWrites } from '../ports/write-guard.js';
import { AssetService } from '../quota/assets.js';
import type { QuotaPolicy, QuotaState } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { UploadService } from '../upload/service.js';
import { expect } from './check.js';
import { FakeClock } from './fake-clock.js';
import { MemoryBlobStore } from './memory-blob-store.js';
import { SeededRandom } from './seeded-random.js';

// Small numbers so random runs cross every threshold and every clock boundary.
const SOFT = 600;
const HARD = 1000;
const GRACE = 60 * 60_000;
const TTL = 10 * 60_000;
const DROP_TTL = 30 * 60_000;
const POLICY: QuotaPolicy = { defaults: { soft: SOFT, hard: HARD }, graceMs: GRACE, federatedShare: 0.25 };
const SIZES = [40, 90, 150, 220, 310, 400];
const content = (i: number): Uint8Array => new Uint8Array(SIZES[i]!).fill(i + 1);
const HASHES = SIZES.map((_, i) => sha256Hex(content(i)));
// u0 pays for itself and for u2 (sponsored); u1 owns a web-upload link.
const USERS = ['0190c000-0000-7000-8000-000000000000', '0190c000-0000-7000-8000-000000000001', '0190c000-0000-7000-8000-000000000002'];
const PAYER = [0, 1, 0];
const PAYERS = [0, 1];

interface MSession {
  id: string;
  user: number;
  payer: number;
  hash: string;
  size: number;
  declared: number;
  state: 'open' | 'merged' | 'done' | 'cancelled';
  expiresAt: number;
  drop: boolean;
}
interface MAsset {
  id: string;
  owner: number;
  hashes: string[];
  meta: string | null;
  state: 'live' | 'trashed' | 'drop' | 'gone';
  dropExpiresAt: number | null;
}
interface Model {
  now: number;
  blobs: Map<string, { size: number; payer: number }>;
  charged: number[];
  hardSince: (number | null)[];
  suspended: boolean[];
  sessions: MSession[];
  assets: MAsset[];
  metaCounter: number;
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
}

const reserved = (m: Model, p: number): number =>
  m.sessions.filter((s) => s.payer === p && s.state === 'open' && m.now < s.expiresAt).reduce((n, s) => n + s.declared, 0);
const used = (m: Model, p: number): number => m.charged[p]! + reserved(m, p);
function expectedState(m: Model, p: number): QuotaState {
  if (m.suspended[p]) return 'Suspended';
  const u = used(m, p);
  if (u >= HARD) return m.now - m.hardSince[p]! > GRACE ? 'GraceExpired' : 'HardExceeded';
  return u >= SOFT ? 'SoftWarning' : 'OK';
}
function charge(m: Model, hash: string, size: number, payer: number): boolean {
  if (m.blobs.has(hash)) return false;
  m.blobs.set(hash, { size, payer });
  m.charged[payer]! += size;
  return true;
}
const isOpen = (m: Model, s: MSession): boolean => s.state === 'open' && m.now < s.expiresAt;

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
    const row = await r.store.readLedger(USERS[p]!, m.now);
    expect(row.charged, `charged of payer ${p}`).toBe(m.charged[p]);
    if (!sweep) expect(row.charged, 'credited outside a sweep').toBeGreaterThanOrEqual(m.lastCharged[p]!);
    m.lastCharged[p] = row.charged;
  }
  // A sponsored account sees (and spends) its sponsor's quota.
  expect((await r.quota.status(USERS[2]!)).used).toBe(used(m, 0));
}

/** Creates a session; on success the model reserves (or merges); on refusal nothing changed. */
async function create(m: Model, r: Real, user: number, idx: number, slack: number, announce: boolean, drop: boolean): Promise<MSession | null> {
  const hash = HASHES[idx]!;
  const declared = SIZES[idx]! + slack;
  const payer = PAYER[user]!;
  const before = used(m, payer);
  const res = drop
    ? await r.uploads.openDrop(USERS[user]!, 'link-1', { declaredSize: declared, contentHash: announce ? hash : null })
    : await r.uploads.create({ accountId: USERS[user]! }, { declaredSize: declared, kind: 'original', contentHash: announce ? hash : null, albumId: null, intentId: null, deviceId: 'd', protocolVersion: '2026-11-01' });
  if (m.suspended[payer]) {
    expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    return null;
  }
  if (before + declared > HARD) {
    expect(res).toMatchObject({ ok: false, code: 'error.quota.exceeded' });
    return null;
  }
  if (!res.ok) throw new Error(`create refused: ${res.code}`);
  const merged = announce && m.blobs.has(hash);
  expect(res.value.state).toBe(merged ? 'Merged' : 'Pending');
  const s: MSession = { id: res.value.uploadId, user, payer, hash, size: SIZES[idx]!, declared, state: merged ? 'merged' : 'open', expiresAt: m.now + TTL, drop };
  m.sessions.push(s);
  // Upload creation never takes used past the hard limit.
  expect(used(m, payer)).toBeLessThanOrEqual(HARD);
  return s;
}

/** PUT + finalize (or finalize alone for a session merged at creation). */
async function finish(m: Model, r: Real, s: MSession): Promise<void> {
  const caller = { accountId: USERS[s.user]! };
  const bytes = content(HASHES.indexOf(s.hash));
  if (s.state === 'open') {
    const put = await r.uploads.put(caller, s.id, (async function* () {
      yield bytes;
    })());
    if (!isOpen(m, s)) {
      expect(put).toMatchObject({ ok: false, code: 'error.conflict' });
      return;
    }
    expect(put.ok).toBe(true);
  }
  const fin = await r.uploads.finalize(caller, s.id, { contentHash: s.hash, manifest: null });
  if (s.state === 'merged') {
    if (!m.blobs.has(s.hash)) {
      expect(fin).toMatchObject({ ok: false, code: 'error.conflict' });
      return;
    }
  } else if (s.state !== 'open' || !isOpen(m, s)) {
    expect(fin).toMatchObject({ ok: false, code: 'error.conflict' });
    return;
  }
  if (!fin.ok) throw new Error(`finalize refused: ${fin.code} ${fin.detail}`);
  const wasOpen = s.state === 'open';
  const charged = wasOpen ? charge(m, s.hash, s.size, s.payer) : false;
  expect(fin.value.state).toBe(charged ? 'Completed' : 'Merged');
  s.state = 'done';
  m.assets.push({ id: s.id, owner: s.user, hashes: [s.hash], meta: null, state: s.drop ? 'drop' : 'live', dropExpiresAt: s.drop ? m.now + DROP_TTL : null });
}

class Upload implements fc.AsyncCommand<Model, Real> {
  constructor(readonly user: number, readonly idx: number, readonly slack: number, readonly announce: boolean, readonly finishNow: boolean) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const s = await create(m, r, this.user, this.idx, this.slack, this.announce, false);
    if (s && this.finishNow) await finish(m, r, s);
    await checkAll(m, r);
  }
  toString = () => `Upload(u${this.user}, #${this.idx}, +${this.slack}, ${this.announce ? 'hash' : 'nohash'}, ${this.finishNow ? 'finish' : 'open'})`;
}

class Drop implements fc.AsyncCommand<Model, Real> {
  constructor(readonly idx: number, readonly finishNow: boolean) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const s = await create(m, r, 1, this.idx, 0, false, true);
    if (s && this.finishNow) await finish(m, r, s);
    await checkAll(m, r);
  }
  toString = () => `Drop(#${this.idx}, ${this.finishNow ? 'finish' : 'open'})`;
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
    const res = await r.uploads.cancel({ accountId: USERS[s.user]! }, s.id);
    expect(res.ok).toBe(isOpen(m, s));
    if (res.ok) s.state = 'cancelled';
    await checkAll(m, r);
  }
  toString = () => `Cancel(${this.pick})`;
}

class Derivative implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number, readonly idx: number) {}
  check = (m: Readonly<Model>) => m.assets.some((a) => a.state === 'live');
  async run(m: Model, r: Real): Promise<void> {
    const live = m.assets.filter((a) => a.state === 'live');
    const a = live[this.pick % live.length]!;
    const hash = HASHES[this.idx]!;
    const payer = PAYER[a.owner]!;
    const res = await r.uploads.create({ accountId: USERS[a.owner]! }, { declaredSize: SIZES[this.idx]!, kind: 'derivative', contentHash: null, albumId: null, intentId: null, deviceId: 'd', protocolVersion: '2026-11-01' });
    if (m.suspended[payer] || used(m, payer) + SIZES[this.idx]! > HARD) {
      expect(res.ok).toBe(false);
    } else {
      if (!res.ok) throw new Error(res.code);
      const caller = { accountId: USERS[a.owner]! };
      expect((await r.uploads.put(caller, res.value.uploadId, (async function* () {
        yield content(HASHES.indexOf(hash));
      })())).ok).toBe(true);
      const fin = await r.uploads.finalize(caller, res.value.uploadId, { contentHash: hash, manifest: { assetId: a.id, intentId: null } });
      if (!fin.ok) throw new Error(fin.code);
      m.sessions.push({ id: res.value.uploadId, user: a.owner, payer, hash, size: SIZES[this.idx]!, declared: SIZES[this.idx]!, state: 'done', expiresAt: m.now + TTL, drop: false });
      charge(m, hash, SIZES[this.idx]!, payer);
      a.hashes.push(hash);
    }
    await checkAll(m, r);
  }
  toString = () => `Derivative(${this.pick}, #${this.idx})`;
}

class Metadata implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number, readonly size: number) {}
  check = (m: Readonly<Model>) => m.assets.some((a) => a.state === 'live');
  async run(m: Model, r: Real): Promise<void> {
    const live = m.assets.filter((a) => a.state === 'live');
    const a = live[this.pick % live.length]!;
    const payer = PAYER[a.owner]!;
    const bytes = new Uint8Array(this.size).fill(0xee);
    new DataView(bytes.buffer).setUint32(0, ++m.metaCounter);
    const hash = sha256Hex(bytes);
    const delta = this.size - (a.meta === null ? 0 : m.blobs.get(a.meta)?.size ?? 0);
    const state = expectedState(m, payer);
    const res = await r.assets.replaceMetadata({ accountId: USERS[a.owner]! }, a.id, bytes);
    if (delta > 0 && (state === 'GraceExpired' || state === 'Suspended')) {
      expect(res).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
    } else {
      expect(res.ok).toBe(true);
      charge(m, hash, this.size, payer);
      a.meta = hash;
    }
    await checkAll(m, r);
  }
  toString = () => `Metadata(${this.pick}, ${this.size})`;
}

type AssetOp = 'trash' | 'restore' | 'purge' | 'adopt' | 'discard';
class OnAsset implements fc.AsyncCommand<Model, Real> {
  constructor(readonly op: AssetOp, readonly pick: number) {}
  check = (m: Readonly<Model>) => m.assets.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const a = m.assets[this.pick % m.assets.length]!;
    const caller = { accountId: USERS[a.owner]! };
    let res: { ok: boolean };
    let expected: boolean;
    switch (this.op) {
      case 'trash':
        res = await r.assets.trash(caller, a.id);
        expected = a.state === 'live';
        if (expected) a.state = 'trashed';
        break;
      case 'restore':
        res = await r.assets.restore(caller, a.id);
        expected = a.state === 'trashed';
        if (expected) a.state = 'live';
        break;
      case 'purge':
        res = await r.assets.purge(caller, a.id);
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
    await checkAll(m, r);
  }
  toString = () => `${this.op}(${this.pick})`;
}

class EmptyTrash implements fc.AsyncCommand<Model, Real> {
  constructor(readonly user: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const mine = m.assets.filter((a) => a.owner === this.user && a.state === 'trashed');
    expect(await r.assets.emptyTrash({ accountId: USERS[this.user]! })).toBe(mine.length);
    for (const a of mine) a.state = 'gone';
    await checkAll(m, r);
  }
  toString = () => `EmptyTrash(u${this.user})`;
}

class Sweep implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    for (const a of m.assets) if (a.state === 'drop' && m.now >= a.dropExpiresAt!) a.state = 'gone';
    const referenced = new Set(m.assets.filter((a) => a.state !== 'gone').flatMap((a) => (a.meta ? [...a.hashes, a.meta] : a.hashes)));
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
  constructor(readonly payer: number, readonly on: boolean) {}
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

function ledgerCommands(): fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] {
  const idx = fc.integer({ min: 0, max: SIZES.length - 1 });
  return [
    fc.tuple(fc.integer({ min: 0, max: 2 }), idx, fc.integer({ min: 0, max: 60 }), fc.boolean(), fc.boolean()).map(([u, i, s, a, f]) => new Upload(u, i, s, a, f)),
    fc.tuple(idx, fc.boolean()).map(([i, f]) => new Drop(i, f)),
    fc.nat(30).map((p) => new Finish(p)),
    fc.nat(30).map((p) => new Cancel(p)),
    fc.tuple(fc.nat(30), idx).map(([p, i]) => new Derivative(p, i)),
    fc.tuple(fc.nat(30), fc.integer({ min: 4, max: 120 })).map(([p, s]) => new Metadata(p, s)),
    fc.tuple(fc.constantFrom<AssetOp>('trash', 'restore', 'purge', 'adopt', 'discard'), fc.nat(30)).map(([op, p]) => new OnAsset(op, p)),
    fc.integer({ min: 0, max: 2 }).map((u) => new EmptyTrash(u)),
    fc.constant(new Sweep()),
    fc.tuple(fc.integer({ min: 0, max: 1 }), fc.boolean()).map(([p, on]) => new Suspend(p, on)),
    fc.oneof(fc.integer({ min: 1, max: 120_000 }), fc.integer({ min: 5 * 60_000, max: 70 * 60_000 })).map((ms) => new AdvanceClock(ms)),
  ];
}

async function freshReal(store: Ports['quota']): Promise<Real> {
  const clock = new FakeClock();
  const random = new SeededRandom(11);
  const blobs = new MemoryBlobStore();
  const quota = new QuotaService({ ledger: store, blobs, clock, random, policy: POLICY });
  const uploads = new UploadService({ sessions: store, assets: store, blobs, quota, writeGuard: admitAllWrites, clock, random, ttlMs: TTL, dropTtlMs: DROP_TTL });
  const assets = new AssetService({ assets: store, blobs, quota, clock, random });
  const sponsored = await quota.setSponsor(USERS[2]!, USERS[0]!);
  if (!sponsored.ok) throw new Error('sponsor');
  return { clock, store, blobs, quota, uploads, assets };
}

/**
 * The quota ledger as a model-based property over a real quota store (`fresh` returns an empty one
 * per run): uploads, dedup, cancels, expiry, trash, purge, sweeps, sponsors, drops and clock
 * advances, with the whole ledger compared to the model after every step. Every adapter runs it.
 */
export function quotaModelProperty(fresh: () => Promise<Ports['quota']>, options: { maxCommands?: number } = {}) {
  return fc.asyncProperty(fc.commands(ledgerCommands(), { maxCommands: options.maxCommands ?? 60 }), async (cmds) => {
    const real = await freshReal(await fresh());
    const model: Model = {
      now: real.clock.now(),
      blobs: new Map(),
      charged: [0, 0],
      hardSince: [null, null],
      suspended: [false, false],
      sessions: [],
      assets: [],
      metaCounter: 0,
      lastCharged: [0, 0],
    };
    await fc.asyncModelRun(() => ({ model, real }), cmds);
  });
}
