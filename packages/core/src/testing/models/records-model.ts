import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { decodeProtectedHeader } from 'jose';
import { verifyHistory } from '../../attestation/history.js';
import { AttestationRing } from '../../attestation/ring.js';
import { fromBase64url } from '../../encoding/bytes.js';
import type { AttestationKeyStore } from '../../ports/attestation-key-store.js';
import type { DeprecationStore } from '../../ports/deprecation-store.js';
import { DeprecationService } from '../../versioning/deprecation-service.js';
import { FakeClock } from '../fake-clock.js';
import { testSecretBox } from '../secret-box.js';
import { SeededRandom } from '../seeded-random.js';
import { MemoryLogger } from '../silent-logger.js';

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

const BUILD = { min: '2026-03-01', max: '2026-11-01' };
const NOTICE = 60 * 60_000;
const VERSIONS = [
  '2026-01-01',
  '2026-03-01',
  '2026-04-01',
  '2026-06-01',
  '2026-08-01',
  '2026-11-01',
  '2026-12-01',
  '2026-02-30',
];
const BLOB = { contentHash: 'e'.repeat(64), size: 7, chargedTo: 'payer', peer: null, storedAt: 0 };

interface ModelAnnouncement {
  version: string;
  effectiveAt: number;
}
interface Model {
  now: number;
  announcements: ModelAnnouncement[];
  /** The highest Min each process has reported so far (it may never go down). */
  seenMin: string[];
  rotations: number;
}
interface Process {
  deprecations: DeprecationService;
  ring: AttestationRing;
}
interface Real {
  clock: FakeClock;
  processes: Process[];
  attestation: AttestationKeyStore;
}

/** The model's own reading of the rule, written independently of effectiveWindow. */
function modelMin(m: Model, at: number): string {
  const inForce = m.announcements.filter((a) => a.effectiveAt <= at).map((a) => a.version);
  const top = [BUILD.min, ...inForce].reduce((x, y) => (y > x ? y : x));
  return top > BUILD.max ? BUILD.max : top;
}
const realDate = (v: string): boolean =>
  !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v);

/** After every command: both processes enforce the model's window, and the history verifies. */
async function invariants(m: Model, r: Real): Promise<void> {
  for (const [i, p] of r.processes.entries()) {
    const list = await p.deprecations.current(r.clock.now());
    const min = [BUILD.min, ...list.filter((a) => a.effectiveAt <= m.now).map((a) => a.minProtocolVersion)].reduce(
      (x, y) => (y > x ? y : x),
    );
    const capped = min > BUILD.max ? BUILD.max : min;
    check(capped === modelMin(m, m.now), `process ${i}: Min ${capped}, model ${modelMin(m, m.now)}`);
    check(capped >= m.seenMin[i]!, `process ${i}: Min went down from ${m.seenMin[i]} to ${capped}`);
    m.seenMin[i] = capped;
  }
  const history = await r.attestation.listAttestationHistory();
  const keys = await r.attestation.listAttestationKeys();
  check(verifyHistory(history).ok, 'history does not verify');
  check(history.length === m.rotations + 1, `history has ${history.length} entries, model ${m.rotations + 1}`);
  const active = keys.filter((k) => k.retiredAt === null);
  check(
    active.length === 1 && active[0]!.kid === history[history.length - 1]!.kid,
    'the signing key is not the last history entry',
  );
}

class Announce implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly process: number,
    readonly version: string,
    readonly leadMs: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const effectiveAt = m.now + this.leadMs;
    const expected =
      realDate(this.version) &&
      this.version <= BUILD.max &&
      this.leadMs >= NOTICE &&
      this.version > modelMin(m, effectiveAt);
    const got = await r.processes[this.process]!.deprecations.announce(this.version, effectiveAt);
    check(
      got.ok === expected,
      `announce ${this.version} in ${this.leadMs} ms: got ${got.ok ? 'ok' : got.code}, model ${expected}`,
    );
    if (got.ok) m.announcements.push({ version: this.version, effectiveAt });
    await invariants(m, r);
  }
  toString = () => `Announce(p${this.process}, ${this.version}, +${this.leadMs})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.set(m.now);
    await invariants(m, r);
  }
  toString = () => `Advance(${this.ms})`;
}

class Rotate implements fc.AsyncCommand<Model, Real> {
  constructor(readonly process: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const entry = await r.processes[this.process]!.ring.rotate();
    m.rotations++;
    check(entry.seq === m.rotations + 1, `rotation appended seq ${entry.seq}, model ${m.rotations + 1}`);
    await invariants(m, r);
  }
  toString = () => `Rotate(p${this.process})`;
}

class Receipt implements fc.AsyncCommand<Model, Real> {
  constructor(readonly process: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const jws = await r.processes[this.process]!.ring.receipt({
      uploaderId: 'u',
      uploadId: 'x',
      contentHash: BLOB.contentHash,
    });
    check(jws !== null, 'no receipt for a stored blob');
    // Whichever key signed it (a process may not have seen the latest rotation yet), the history vouches for it.
    const { kid } = decodeProtectedHeader(jws!);
    const entry = (await r.attestation.listAttestationHistory()).find((e) => e.kid === kid);
    check(entry !== undefined, `receipt kid ${String(kid)} is not in the history`);
    const [h, p, s] = jws!.split('.');
    check(
      ed25519.verify(fromBase64url(s!)!, new TextEncoder().encode(`${h}.${p}`), fromBase64url(entry!.publicKey)!),
      'receipt signature does not verify',
    );
    await invariants(m, r);
  }
  toString = () => `Receipt(p${this.process})`;
}

/**
 * Deprecation announcements and attestation rotations made through two processes over one pair of
 * stores, against a plain model: both processes always enforce the model's Min (which never goes
 * down), announcements are admitted exactly when the model says, and the history always verifies
 * with one entry per rotation. Each adapter runs this against its own stores.
 */
export function recordsModelProperty(
  fresh: () => Promise<{ deprecations: DeprecationStore; attestation: AttestationKeyStore }>,
): fc.IAsyncPropertyWithHooks<[fc.Scheduler | unknown, readonly fc.AsyncCommand<Model, Real>[]]> {
  const process = fc.integer({ min: 0, max: 1 });
  const commands = [
    fc
      .tuple(
        process,
        fc.constantFrom(...VERSIONS),
        fc.oneof(fc.integer({ min: 0, max: 3 * NOTICE }), fc.constant(NOTICE), fc.constant(NOTICE - 1)),
      )
      .map(([p, v, l]) => new Announce(p, v, l)),
    fc.oneof(fc.integer({ min: 1, max: NOTICE }), fc.constant(NOTICE / 2), fc.constant(1)).map((ms) => new Advance(ms)),
    process.map((p) => new Rotate(p)),
    process.map((p) => new Receipt(p)),
  ];
  return fc.asyncProperty(fc.integer(), fc.commands(commands, { maxCommands: 25 }), async (seed, cmds) => {
    const stores = await fresh();
    const clock = new FakeClock();
    const blobs = { findBlob: async (h: string) => (h === BLOB.contentHash ? BLOB : null) };
    const processes: Process[] = [];
    for (let i = 0; i < 2; i++) {
      const deprecations = new DeprecationService({
        store: stores.deprecations,
        clock,
        logger: new MemoryLogger(),
        policy: { build: BUILD, noticeMs: NOTICE },
      });
      await deprecations.refresh();
      const ring = new AttestationRing({
        store: stores.attestation,
        blobs,
        clock,
        random: new SeededRandom(seed + i),
        issuer: 'https://x.example',
        box: testSecretBox(),
      });
      await ring.init();
      processes.push({ deprecations, ring });
    }
    const model: Model = { now: clock.now(), announcements: [], seenMin: [BUILD.min, BUILD.min], rotations: 0 };
    await fc.asyncModelRun(() => ({ model, real: { clock, processes, attestation: stores.attestation } }), cmds);
  }) as never;
}
