import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryMemberUpgradeStore } from '../testing/index.js';
import type { WriteTransport } from '../ports/member-upgrade.js';
import { frozenStateHash, type OutgoingWrite } from './member.js';
import { MemberUpgradeService } from './member-service.js';

const OLD = { albumId: 'old-album', version: '2026-03-01' };
const NEW_ALBUM = 'new-album';
const INTENTS = ['intent-a', 'intent-b'];
const STATE = {
  members: ['carol', 'alice', 'bob'],
  manifestHashes: [new Uint8Array([2]), new Uint8Array([1])],
  provenanceHead: new Uint8Array([9, 9]),
};
const HASH = frozenStateHash(STATE, 1);

/** The server side of delivery: dedups by writeId, and records a write ever sent to two albums. */
class Receiver implements WriteTransport {
  readonly landed = new Map<string, OutgoingWrite>();
  readonly conflicts: string[] = [];
  failNext = false;
  async sendWrite(w: OutgoingWrite): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('crash while sending');
    }
    const prior = this.landed.get(w.writeId);
    if (prior !== undefined && prior.albumId !== w.albumId) this.conflicts.push(w.writeId);
    this.landed.set(w.writeId, w);
  }
}

type Target = 'old' | 'new' | 'pending';
interface Model {
  phase: 'normal' | 'quiescing' | 'frozen' | 'upgraded';
  intent: number | null;
  upgradedBy: number | null;
  writes: Map<string, Target>;
  next: number;
}
interface Real {
  service: MemberUpgradeService;
  store: MemoryMemberUpgradeStore;
  receiver: Receiver;
}

/** Runs an event; a crash mid-delivery is allowed (the outbox survives), anything else is a bug. */
async function step(_r: Real, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (e) {
    expect(String(e)).toContain('crash while sending');
  }
}
const settle = (m: Model, to: 'old' | 'new') => {
  for (const [id, t] of m.writes) if (t === 'pending') m.writes.set(id, to);
};

class Intent implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const intent = { intentId: INTENTS[this.k]!, fromVersion: OLD.version, toVersion: '2026-09-01' };
    await step(r, async () => {
      const effects = await r.service.handle(OLD, { type: 'intent', intent });
      if (m.intent !== null && m.intent !== this.k && m.phase !== 'upgraded')
        expect(effects).toContainEqual(expect.objectContaining({ type: 'reject_intent' }));
    });
    if (m.phase === 'normal') {
      m.phase = 'quiescing';
      m.intent = this.k;
    }
  }
  toString = () => `Intent(${this.k})`;
}

class LocalWrite implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const id = `w${m.next++}`;
    m.writes.set(id, m.phase === 'normal' ? 'old' : m.phase === 'upgraded' ? 'new' : 'pending');
    await step(r, () =>
      r.service.handle(OLD, { type: 'local_write', writeId: id, payload: new TextEncoder().encode(id) }),
    );
    if (m.writes.get(id) === 'pending') expect(r.receiver.landed.has(id)).toBe(false);
  }
  toString = () => 'LocalWrite';
}

class ServerPhase implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly phase: 'normal' | 'frozen',
    readonly k: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const intentId = this.phase === 'normal' ? null : INTENTS[this.k]!;
    await step(r, () => r.service.handle(OLD, { type: 'server_phase', phase: this.phase, intentId }));
    if (m.intent === null || m.phase === 'upgraded') return;
    if (this.phase === 'normal' || this.k !== m.intent) {
      settle(m, 'old');
      m.phase = 'normal';
      m.intent = null;
    } else {
      m.phase = 'frozen';
    }
  }
  toString = () => `ServerPhase(${this.phase}, ${this.k})`;
}

class Tombstone implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly k: number,
    readonly match: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const localHash = this.match ? HASH : frozenStateHash({ ...STATE, members: ['alice'] }, 1);
    await step(r, () =>
      r.service.handle(OLD, {
        type: 'tombstone',
        intentId: INTENTS[this.k]!,
        frozenStateHash: HASH,
        localHash,
        newAlbumId: NEW_ALBUM,
        blobRefs: ['sha256:aa'],
        albumMasterKey: new Uint8Array(32).fill(1),
        writeTierKey: new Uint8Array(32).fill(2),
      }),
    );
    if (m.phase === 'upgraded' || m.intent !== this.k) return;
    if (this.match) {
      settle(m, 'new');
      m.phase = 'upgraded';
      m.upgradedBy = this.k;
    } else {
      settle(m, 'old');
      m.phase = 'normal';
    }
    m.intent = null;
  }
  toString = () => `Tombstone(${this.k}, ${this.match ? 'match' : 'mismatch'})`;
}

/** The next send fails as if the process died mid-delivery. */
class CrashNextSend implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    r.receiver.failNext = true;
  }
  toString = () => 'CrashNextSend';
}

/** A restart: a fresh service over the persisted store resumes from upgrade_pending_to. */
class Restart implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    r.service = new MemberUpgradeService({ store: r.store, transport: r.receiver });
    let pending: { upgradePendingTo: string | null; intentId: string | null } | null = null;
    await step(r, async () => {
      pending = await r.service.resume(OLD);
    });
    if (pending !== null && m.phase !== 'upgraded') {
      expect(pending).toEqual(
        m.intent === null
          ? { upgradePendingTo: null, intentId: null }
          : { upgradePendingTo: '2026-09-01', intentId: INTENTS[m.intent] },
      );
    }
  }
  toString = () => 'Restart';
}

describe('upgrade ceremony, member side, model-based', () => {
  it('every queued write ends replayed once on the new album or flushed to the old version, never both, never lost', async () => {
    const commands = [
      fc.nat(1).map((k) => new Intent(k)),
      fc.constant(new LocalWrite()),
      fc.tuple(fc.constantFrom('normal' as const, 'frozen' as const), fc.nat(1)).map(([p, k]) => new ServerPhase(p, k)),
      fc.tuple(fc.nat(1), fc.boolean()).map(([k, match]) => new Tombstone(k, match)),
      fc.constant(new CrashNextSend()),
      fc.constant(new Restart()),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 50 }), async (cmds) => {
        const store = new MemoryMemberUpgradeStore();
        const receiver = new Receiver();
        const real: Real = { service: new MemberUpgradeService({ store, transport: receiver }), store, receiver };
        const model: Model = { phase: 'normal', intent: null, upgradedBy: null, writes: new Map(), next: 0 };
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        // Finish the story: restart, and let the server's deadline pass if an upgrade is still pending.
        receiver.failNext = false;
        await real.service.resume(OLD);
        if (model.intent !== null) {
          await real.service.handle(OLD, { type: 'server_phase', phase: 'normal', intentId: null });
          settle(model, 'old');
        }
        expect(receiver.conflicts).toEqual([]);
        for (const [id, target] of model.writes) {
          const landed = receiver.landed.get(id);
          expect(landed, `write ${id}`).toBeDefined();
          expect(landed!.albumId).toBe(target === 'new' ? NEW_ALBUM : OLD.albumId);
          expect(landed!.version).toBe(target === 'new' ? '2026-09-01' : OLD.version);
        }
        expect(receiver.landed.size).toBe(model.writes.size);
        const final = (await store.loadMemberState(OLD.albumId)) ?? { outbox: [], queue: [] };
        expect(final.outbox).toEqual([]);
        expect(final.queue).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });
});

describe('frozenStateHash', () => {
  it('does not depend on member or manifest order, and changes with any content', () => {
    const shuffled = {
      members: ['bob', 'carol', 'alice'],
      manifestHashes: [new Uint8Array([1]), new Uint8Array([2])],
      provenanceHead: new Uint8Array([9, 9]),
    };
    expect(frozenStateHash(shuffled, 1)).toEqual(HASH);
    expect(frozenStateHash({ ...STATE, provenanceHead: new Uint8Array([9]) }, 1)).not.toEqual(HASH);
    expect(frozenStateHash({ ...STATE, manifestHashes: [new Uint8Array([1])] }, 1)).not.toEqual(HASH);
    expect(frozenStateHash({ ...STATE, members: ['alice', 'bob'] }, 1)).not.toEqual(HASH);
    expect(HASH.length).toBe(32);
    expect(() => frozenStateHash(STATE, 2)).toThrow(/crypto_suite_id 2/);
  });
});
