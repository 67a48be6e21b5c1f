import fc from 'fast-check';
import { UpgradeService } from '../../album-upgrade/service.js';
import { AlbumWriteGuard } from '../../write-guard/guard.js';
import { uuidv7 } from '../../encoding/uuid.js';
import type { Ports } from '../../ports/ports.js';
import { DEFAULT_PROTOCOL_WINDOW } from '../../versioning/protocol.js';
import { expect } from './check.js';
import { FakeClock } from '../fake-clock.js';
import { FakeUploadsInFlight } from '../memory-albums.js';
import { TestDevice, TestIdentity } from '../test-identity.js';

const ACCOUNT = '0190a000-0000-7000-8000-0000000000aa';
const ALBUM = uuidv7(Date.parse('2026-01-01T00:00:00Z'), new Uint8Array(10).fill(7));
const PIN = '2026-03-01';
const device = new TestDevice('admin-phone');
const identity = new TestIdentity('model-owner');
const DEADLINES = [60, 600, 3_600, undefined] as const;
const INTENTS = DEADLINES.map((deadline_s, k) => {
  const intent_id = uuidv7(Date.parse('2026-01-02T00:00:00Z') + k, new Uint8Array(10).fill(k + 1));
  const body = device.signUpgradeIntent({
    album_id: ALBUM,
    from_version: PIN,
    to_version: '2026-06-01',
    intent_id,
    ...(deadline_s === undefined ? {} : { deadline_s }),
  });
  return { intentId: intent_id, deadlineMs: (deadline_s ?? 604_800) * 1000, body };
});

interface Model {
  now: number;
  inFlight: number;
  live: { k: number; expiresAt: number } | null;
  /** Each intent's one and only expiry, fixed when first accepted. */
  expiry: Map<number, number>;
}
interface Real {
  service: UpgradeService;
  albums: Ports['albums'];
  writes: AlbumWriteGuard;
  uploads: FakeUploadsInFlight;
  clock: FakeClock;
}
const caller = { accountId: ACCOUNT, protocolVersion: PIN };
const liveAt = (m: Model) => (m.live !== null && m.now < m.live.expiresAt ? m.live : null);

async function checkStatus(m: Model, r: Real): Promise<void> {
  const live = liveAt(m);
  if (live === null) m.live = null;
  const status = await r.service.status(ACCOUNT, ALBUM);
  expect(status).toEqual({
    ok: true,
    value:
      live === null
        ? { phase: 'normal', intentId: null, toVersion: null, expiresAt: null, inFlight: m.inFlight }
        : {
            phase: m.inFlight > 0 ? 'quiescing' : 'frozen',
            intentId: INTENTS[live.k]!.intentId,
            toVersion: '2026-06-01',
            expiresAt: live.expiresAt,
            inFlight: m.inFlight,
          },
  });
  // Same intent, never two states: every stored intent keeps the expiry it was first given.
  for (const [k, expiresAt] of m.expiry)
    expect((await r.albums.findIntent(INTENTS[k]!.intentId))?.expiresAt).toBe(expiresAt);
  let stored = 0;
  for (const i of INTENTS) if ((await r.albums.findIntent(i.intentId)) !== null) stored++;
  expect(stored, 'stored intents').toBe(m.expiry.size);
}

class Propose implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.service.propose(caller, ALBUM, INTENTS[this.k]!.body);
    const live = liveAt(m);
    if (m.expiry.has(this.k)) {
      if (live?.k === this.k)
        expect(res).toMatchObject({
          ok: true,
          value: { intentId: INTENTS[this.k]!.intentId, expiresAt: live.expiresAt },
        });
      else if (live !== null)
        expect(res).toMatchObject({
          ok: false,
          code: 'error.album.upgrade_in_flight',
          data: { live_intent_id: INTENTS[live.k]!.intentId },
        });
      else expect(res).toMatchObject({ ok: false, code: 'error.conflict' });
    } else if (live !== null) {
      expect(res).toMatchObject({
        ok: false,
        code: 'error.album.upgrade_in_flight',
        data: { live_intent_id: INTENTS[live.k]!.intentId },
      });
    } else {
      const expiresAt = m.now + INTENTS[this.k]!.deadlineMs;
      expect(res).toMatchObject({ ok: true, value: { intentId: INTENTS[this.k]!.intentId, expiresAt } });
      m.live = { k: this.k, expiresAt };
      m.expiry.set(this.k, expiresAt);
    }
    await checkStatus(m, r);
  }
  toString = () => `Propose(${this.k})`;
}

class Abort implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.service.abort(caller, ALBUM, INTENTS[this.k]!.intentId);
    const live = liveAt(m);
    if (live?.k === this.k) {
      expect(res.ok).toBe(true);
      m.live = null;
    } else {
      expect(res).toMatchObject({ ok: false, code: 'error.conflict' });
    }
    await checkStatus(m, r);
  }
  toString = () => `Abort(${this.k})`;
}

/** An upload session starts: it must pass the quiescence filter first. */
class StartUpload implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number | null) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const intentId = this.k === null ? null : INTENTS[this.k]!.intentId;
    const res = await r.writes.checkWrite(
      { accountId: ACCOUNT, deviceId: device.deviceId, albumId: ALBUM, intentId, protocolVersion: PIN },
      r.clock.now(),
    );
    const live = liveAt(m);
    if (live === null || live.k === this.k) {
      expect(res.ok).toBe(true);
      m.inFlight++;
      r.uploads.set(ALBUM, m.inFlight);
    } else {
      expect(res).toMatchObject({
        ok: false,
        code: 'error.upload.album_quiescing',
        data: { live_intent_id: INTENTS[live.k]!.intentId },
      });
    }
    await checkStatus(m, r);
  }
  toString = () => `StartUpload(${this.k})`;
}

class EndUpload implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => m.inFlight > 0;
  async run(m: Model, r: Real): Promise<void> {
    m.inFlight--;
    r.uploads.set(ALBUM, m.inFlight);
    await checkStatus(m, r);
  }
  toString = () => 'EndUpload';
}

class AdvanceClock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
    await checkStatus(m, r);
  }
  toString = () => `AdvanceClock(${this.ms})`;
}

/** Lands on the live intent's deadline exactly, or one millisecond before it. */
class ToDeadline implements fc.AsyncCommand<Model, Real> {
  constructor(readonly before: boolean) {}
  check = (m: Readonly<Model>) => liveAt(m as Model) !== null;
  async run(m: Model, r: Real): Promise<void> {
    m.now = m.live!.expiresAt - (this.before ? 1 : 0);
    r.clock.set(m.now);
    await checkStatus(m, r);
  }
  toString = () => `ToDeadline(${this.before ? '-1ms' : 'exact'})`;
}

/**
 * The server side of the upgrade ceremony as a model-based property over real album and device
 * stores (`fresh` returns an empty port set per run): one live intent, its expiry fixed at
 * received_at + deadline, quiescence as a filter. Every adapter runs it.
 */
export function upgradeModelProperty(
  fresh: () => Promise<Pick<Ports, 'accounts' | 'albums' | 'devices'>>,
  options: { maxCommands?: number } = {},
) {
  const commands = [
    fc.nat(INTENTS.length - 1).map((k) => new Propose(k)),
    fc.nat(INTENTS.length - 1).map((k) => new Abort(k)),
    fc.option(fc.nat(INTENTS.length - 1), { nil: null }).map((k) => new StartUpload(k)),
    fc.constant(new EndUpload()),
    fc
      .oneof(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: 60_000, max: 4_000_000 }))
      .map((ms) => new AdvanceClock(ms)),
    fc.boolean().map((b) => new ToDeadline(b)),
  ];
  return fc.asyncProperty(fc.commands(commands, { maxCommands: options.maxCommands ?? 40 }), async (cmds) => {
    const clock = new FakeClock();
    const { accounts, albums, devices } = await fresh();
    // SQL stores hold albums and directories under an account row.
    await accounts.createAccount({
      id: ACCOUNT,
      address: 'owner@example.org',
      addressKey: 'owner@example.org',
      passwordHash: 'x',
      displayName: null,
      createdAt: 0,
      lockedAt: null,
      credentialsChangedAt: null,
    });
    const uploads = new FakeUploadsInFlight();
    await devices.publishDirectory({
      accountId: ACCOUNT,
      identityKey: identity.publicKey,
      seq: 1,
      devices: [{ deviceId: device.deviceId, ed25519: device.ed25519, mldsa65: device.mldsa65, addedAt: 0 }],
      body: new Uint8Array(),
      acceptedAt: 0,
    });
    await albums.createAlbum({
      id: ALBUM,
      accountId: ACCOUNT,
      protocolVersion: PIN,
      createdAt: clock.now(),
      upgrade: null,
    });
    const window = DEFAULT_PROTOCOL_WINDOW;
    const service = new UpgradeService({ albums, directories: devices, uploads, clock, window });
    const writes = new AlbumWriteGuard({ albums, directories: devices, window });
    const model: Model = { now: clock.now(), inFlight: 0, live: null, expiry: new Map() };
    await fc.asyncModelRun(() => ({ model, real: { service, albums, writes, uploads, clock } }), cmds);
  });
}
