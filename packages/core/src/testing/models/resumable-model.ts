import fc from 'fast-check';
import { concatBytes, sha256Hex } from '../../encoding/bytes.js';
import type { ErrorCode, Result } from '../../errors.js';
import type { Ports } from '../../ports/ports.js';
import { admitAllWrites } from '../../ports/write-guard.js';
import type { QuotaPolicy } from '../../quota/machine.js';
import { QuotaService } from '../../quota/service.js';
import { ResumableUploads, type ResumableView } from '../../upload/resumable.js';
import { UploadService } from '../../upload/service.js';
import { FakeClock } from '../fake-clock.js';
import { MemoryBlobStore } from '../memory-blob-store.js';
import { SeededRandom } from '../seeded-random.js';
import { expect } from './check.js';

const OWNER = '0190c000-0000-7000-8000-0000000000a1';
const VERSION = '2026-06-01';
const TTL_MS = 60_000;
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

/** What the session must look like, written out here from the protocol's meaning (tus 1.0), not asked of the rules under test. */
interface Model {
  /** The bytes acknowledged so far, in order: their length is the offset. */
  accepted: Uint8Array[];
  offset: number;
  state: 'open' | 'received' | 'cancelled' | 'expired';
}
interface Real {
  readonly clock: FakeClock;
  readonly blobs: MemoryBlobStore;
  readonly uploads: UploadService;
  /** Two processes' offset services over the same stores. */
  readonly resumable: readonly [ResumableUploads, ResumableUploads];
  readonly id: string;
  readonly length: number;
}

const caller = { accountId: OWNER };

async function* chunks(bytes: Uint8Array, size = 3): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** `n` bytes that tell runs apart: each byte names the run (`tag`) and its place. */
const bytesOf = (n: number, tag: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (tag * 31 + i) & 0xff);

function code(r: Result<unknown, ErrorCode>): string {
  return r.ok ? 'ok' : r.code;
}

/** The session as the model says, checked against what HEAD answers and what the store holds. */
async function agree(m: Model, r: Real, which: 0 | 1): Promise<void> {
  const head = await r.resumable[which].offset(caller, r.id);
  if (m.state === 'cancelled' || m.state === 'expired') {
    expect(code(head), `HEAD of a ${m.state} session`).toBe('error.not_found');
    return;
  }
  expect(head.ok && head.value.offset, 'HEAD offset').toBe(m.offset);
  if (m.state === 'received') {
    // The runs became the session's staged bytes: exactly what was acknowledged, in order.
    const all = concatBytes(...m.accepted);
    const s = await r.uploads.get(caller, r.id);
    expect(s.ok && s.value.state, 'state once every byte is in').toBe('WaitingForProcessing');
    const staged = r.blobs.staged.get(r.id);
    expect(staged !== undefined && sha256Hex(staged), 'staged bytes').toBe(sha256Hex(all));
  }
}

/** A PATCH at the offset (`shift` 0), behind it or past it, of `n` bytes, with a right, wrong or no checksum. */
class Patch implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly which: 0 | 1,
    readonly shift: -1 | 0 | 1,
    readonly n: number,
    readonly checksum: 'none' | 'right' | 'wrong',
    readonly tag: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const at = Math.max(0, m.offset + this.shift);
    const bytes = bytesOf(this.n, this.tag);
    const sha256 =
      this.checksum === 'none'
        ? null
        : this.checksum === 'right'
          ? sha256Hex(bytes)
          : sha256Hex(bytesOf(this.n + 1, this.tag));
    const got = await r.resumable[this.which].append(caller, r.id, {
      offset: at,
      body: chunks(bytes),
      sha256,
      protocolVersion: VERSION,
    });
    let want: string;
    if (m.state !== 'open') want = 'error.conflict';
    else if (at !== m.offset) want = 'error.conflict';
    else if (at + this.n > r.length) want = 'error.upload.too_large';
    else if (this.n > 0 && this.checksum === 'wrong') want = 'error.upload.checksum_mismatch';
    else want = 'ok';
    expect(code(got), `${this}`).toBe(want);
    if (!got.ok && got.code === 'error.conflict' && m.state === 'open')
      expect(got.data?.upload_offset, 'the offset a 409 names').toBe(m.offset);
    if (want === 'ok' && m.state === 'open' && this.n > 0) {
      m.accepted.push(bytes);
      m.offset += this.n;
      if (m.offset === r.length) m.state = 'received';
    }
    expect(got.ok && (got.value as ResumableView).offset, 'the offset a 204 names').toBe(got.ok ? m.offset : false);
    await agree(m, r, this.which === 0 ? 1 : 0);
  }
  toString = () =>
    `patch(p${this.which}, shift ${this.shift}, ${this.n} bytes, checksum ${this.checksum}, tag ${this.tag})`;
}

/** Two PATCHes at the offset at once, from both processes, with different bytes: exactly one is kept, whole. */
class Race implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly a: number,
    readonly b: number,
  ) {}
  check = (m: Readonly<Model>) => m.state === 'open';
  async run(m: Model, r: Real): Promise<void> {
    const room = r.length - m.offset;
    const sizes = [Math.min(this.a, room), Math.min(this.b, room)] as const;
    const runs = [bytesOf(sizes[0], 101), bytesOf(sizes[1], 202)] as const;
    const got = await Promise.all(
      ([0, 1] as const).map((w) =>
        r.resumable[w].append(caller, r.id, {
          offset: m.offset,
          body: chunks(runs[w]),
          sha256: null,
          protocolVersion: VERSION,
        }),
      ),
    );
    const won = ([0, 1] as const).filter((w) => got[w]!.ok);
    expect(won.length, `winners of ${this}`).toBe(1);
    const loser = got[won[0] === 0 ? 1 : 0]!;
    expect(code(loser), 'the loser').toBe('error.conflict');
    m.accepted.push(runs[won[0]!]);
    m.offset += sizes[won[0]!];
    if (m.offset === r.length) m.state = 'received';
    await agree(m, r, 0);
  }
  toString = () => `race(${this.a}, ${this.b})`;
}

/** tus termination: the session is cancelled while open; nothing to resume afterwards. */
class Terminate implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const got = await r.uploads.cancel(caller, r.id);
    // Open sessions end (every byte in or not); a session already over is a conflict.
    expect(code(got), 'termination').toBe(m.state === 'open' || m.state === 'received' ? 'ok' : 'error.conflict');
    if (got.ok) m.state = 'cancelled';
    await agree(m, r, 1);
  }
  toString = () => 'terminate';
}

/** The session's lifetime runs out: it takes nothing more, and there is nothing to resume. */
class Lapse implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => m.state === 'open';
  async run(m: Model, r: Real): Promise<void> {
    r.clock.advance(TTL_MS);
    m.state = 'expired';
    await agree(m, r, 0);
  }
  toString = () => 'lapse';
}

/**
 * A resumable upload as a model-based property: PATCHes at, behind and past the offset, with right,
 * wrong and no checksums, through two processes' services over one set of stores, races of two
 * PATCHes at one offset, termination and expiry. At every step HEAD (in the other process) answers
 * the offset of exactly the bytes acknowledged; a refused PATCH changes nothing; of two racing
 * PATCHes one is kept whole and the other is 409; once the offset reaches the length the session
 * holds exactly the acknowledged bytes, in order. `openPorts` gives fresh stores (memory in core,
 * each adapter over its database).
 */
export function resumableModelProperty(
  openPorts: () => Promise<Pick<Ports, 'quota' | 'segments'>>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number]> {
  const which = fc.constantFrom<0 | 1>(0, 1);
  const commands = [
    fc
      .tuple(
        which,
        fc.constantFrom<-1 | 0 | 1>(0, 0, 0, -1, 1),
        fc.integer({ min: 0, max: 24 }),
        fc.constantFrom<'none' | 'right' | 'wrong'>('none', 'none', 'right', 'wrong'),
        fc.integer({ min: 1, max: 99 }),
      )
      .map(([w, s, n, c, t]) => new Patch(w, s, n, c, t)),
    fc.tuple(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 16 })).map(([a, b]) => new Race(a, b)),
    fc.constant(new Terminate()),
    fc.constant(new Lapse()),
  ];
  let seed = 0;
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 25 }),
    fc.integer({ min: 1, max: 60 }),
    async (cmds, length) => {
      const ports = await openPorts();
      const clock = new FakeClock();
      const random = new SeededRandom(++seed);
      const blobs = new MemoryBlobStore();
      const quota = new QuotaService({ ledger: ports.quota, blobs, clock, random, policy: POLICY });
      const uploads = new UploadService({
        sessions: ports.quota,
        assets: ports.quota,
        blobs,
        quota,
        writeGuard: admitAllWrites,
        clock,
        random,
        ttlMs: TTL_MS,
        dropTtlMs: TTL_MS,
        federationPeers: [],
      });
      const process = () =>
        new ResumableUploads({
          sessions: ports.quota,
          segments: ports.segments,
          blobs,
          writeGuard: admitAllWrites,
          clock,
          random,
        });
      const created = await uploads.create(caller, {
        declaredSize: length,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: VERSION,
      });
      if (!created.ok) throw new Error(created.code);
      const real: Real = {
        clock,
        blobs,
        uploads,
        resumable: [process(), process()],
        id: created.value.uploadId,
        length,
      };
      const model: Model = { accepted: [], offset: 0, state: 'open' };
      await fc.asyncModelRun(() => ({ model, real }), cmds);
    },
  );
}
