import { describe, expect, it } from 'vitest';
import { AlbumService } from '../albums/service.js';
import { canonicalCbor, decodeCanonicalCbor } from '../encoding/cbor.js';
import { uuidv7 } from '../encoding/uuid.js';
import { DeviceDirectoryService } from '../devices/service.js';
import {
  FakeClock,
  FakeUploadsInFlight,
  MemoryAlbumStore,
  MemoryDeviceStore,
  SeededRandom,
  TestDevice,
  TestIdentity,
} from '../testing/index.js';
import { DEFAULT_PROTOCOL_WINDOW } from '../versioning/protocol.js';
import { UpgradeService } from './service.js';

/** These tests are about directories, not sessions: every caller signed in just now. */
const RECENT = { requireRecentAuthentication: async () => ({ ok: true as const, value: undefined }) };

const ACCOUNT = '0190a000-0000-7000-8000-0000000000b1';
const OTHER = '0190a000-0000-7000-8000-0000000000b2';
const admin = new TestDevice('admin');
const stranger = new TestDevice('stranger');
const id = new TestIdentity('svc-test');
const V = '2026-05-01';

async function setup() {
  const clock = new FakeClock();
  const albums = new MemoryAlbumStore();
  const devices = new MemoryDeviceStore();
  const uploads = new FakeUploadsInFlight();
  const window = DEFAULT_PROTOCOL_WINDOW;
  await new DeviceDirectoryService({ directories: devices, clock, sessions: RECENT }).publish(
    { accountId: ACCOUNT, sessionId: 'session' },
    id.signDirectory(ACCOUNT, 1, [admin]),
  );
  const albumService = new AlbumService({ albums, directories: devices, clock, random: new SeededRandom(4), window });
  const upgrades = new UpgradeService({ albums, directories: devices, uploads, clock, window });
  const created = await albumService.create({ accountId: ACCOUNT, deviceId: 'admin', protocolVersion: V });
  if (!created.ok) throw new Error('album');
  const albumId = created.value.albumId;
  const intent = (over: Record<string, unknown> = {}) => ({
    album_id: albumId,
    from_version: V,
    to_version: '2026-09-01',
    intent_id: uuidv7(clock.now(), new Uint8Array(10).fill(3)),
    ...over,
  });
  return { clock, albums, uploads, albumService, upgrades, albumId, intent };
}

describe('albums', () => {
  it('creation pins the request version and needs an active listed device', async () => {
    const { albumService, albums } = await setup();
    const r = await albumService.create({ accountId: ACCOUNT, deviceId: 'admin', protocolVersion: '2026-04-02' });
    expect(r).toMatchObject({ ok: true, value: { protocolVersion: '2026-04-02' } });
    expect((await albums.findAlbum(r.ok ? r.value.albumId : ''))?.protocolVersion).toBe('2026-04-02');
    expect(await albumService.create({ accountId: ACCOUNT, deviceId: 'stranger', protocolVersion: V })).toMatchObject({
      ok: false,
      code: 'error.device.unknown',
    });
    expect(await albumService.create({ accountId: OTHER, deviceId: 'admin', protocolVersion: V })).toMatchObject({
      ok: false,
      code: 'error.device.unknown',
    });
  });

  it('the write guard checks device, album ownership, pin, then quiescence', async () => {
    const { albumService, albumId, upgrades, intent } = await setup();
    const g = albumService.writeGuard;
    const now = Date.parse('2026-11-21T10:00:00.000Z');
    const w = (over: Record<string, unknown>) =>
      g.checkWrite(
        { accountId: ACCOUNT, deviceId: 'admin', albumId, intentId: null, protocolVersion: V, ...over },
        now,
      );
    expect(await w({})).toEqual({ ok: true, value: undefined });
    expect(await w({ deviceId: 'stranger' })).toMatchObject({ code: 'error.device.unknown' });
    expect(await w({ albumId: uuidv7(1, new Uint8Array(10)) })).toMatchObject({ code: 'error.not_found' });
    expect(await w({ accountId: OTHER })).toMatchObject({ code: 'error.device.unknown' });
    expect(await w({ protocolVersion: '2026-04-30' })).toMatchObject({
      code: 'error.protocol.below_album_pin',
      data: { album_pin: V },
    });
    expect(await w({ protocolVersion: '2026-10-01' })).toMatchObject({ ok: true });
    const i = intent();
    expect(
      (await upgrades.propose({ accountId: ACCOUNT, protocolVersion: V }, albumId, admin.signUpgradeIntent(i))).ok,
    ).toBe(true);
    expect(await w({})).toMatchObject({ code: 'error.upload.album_quiescing', data: { live_intent_id: i.intent_id } });
    expect(await w({ intentId: i.intent_id })).toEqual({ ok: true, value: undefined });
    expect(await g.checkFinalize({ accountId: ACCOUNT, albumId, manifestIntentId: i.intent_id }, now)).toMatchObject({
      ok: true,
    });
    expect(await g.checkFinalize({ accountId: ACCOUNT, albumId, manifestIntentId: null }, now)).toMatchObject({
      ok: true,
    });
    expect(
      await g.checkFinalize({ accountId: ACCOUNT, albumId, manifestIntentId: uuidv7(5, new Uint8Array(10)) }, now),
    ).toMatchObject({ code: 'error.conflict' });
    expect(
      await g.checkFinalize({ accountId: ACCOUNT, albumId: null, manifestIntentId: i.intent_id }, now),
    ).toMatchObject({ code: 'error.conflict' });
    // A later request of a session opened in the album: the pin holds for it, quiescence does not (it counts in flight).
    expect(await g.checkInFlightWrite({ albumId, protocolVersion: V })).toEqual({ ok: true, value: undefined });
    expect(await g.checkInFlightWrite({ albumId, protocolVersion: '2026-04-30' })).toMatchObject({
      code: 'error.protocol.below_album_pin',
      data: { album_pin: V },
    });
  });
});

describe('upgrade proposals', () => {
  const caller = { accountId: ACCOUNT, protocolVersion: V };

  it('refuses each kind of bad proposal with its own code, changing nothing', async () => {
    const { upgrades, albumId, intent, albums } = await setup();
    const p = (body: Uint8Array, c = caller, album = albumId) => upgrades.propose(c, album, body);
    expect(await p(new Uint8Array([0xa0]))).toMatchObject({ code: 'error.request.invalid' });
    const good = decodeCanonicalCbor(admin.signUpgradeIntent(intent())) as Record<string, unknown>;
    expect(await p(canonicalCbor({ ...good, extra: 1 }))).toMatchObject({ code: 'error.request.invalid' });
    expect(await p(admin.signUpgradeIntent(intent({ intent_id: 'not-a-uuid' })))).toMatchObject({
      code: 'error.request.invalid',
    });
    expect(await p(admin.signUpgradeIntent(intent({ deadline_s: -1 })))).toMatchObject({
      code: 'error.request.invalid',
    });
    // CBOR's `undefined` under the key is a value that is not a whole number, not an absent key.
    const undefinedDeadline = canonicalCbor({
      ...good,
      intent: { ...(good.intent as Record<string, unknown>), deadline_s: undefined },
    });
    expect(undefinedDeadline.includes(0xf7)).toBe(true);
    expect(await p(undefinedDeadline)).toMatchObject({ code: 'error.request.invalid' });
    expect(await p(admin.signUpgradeIntent(intent()), caller, uuidv7(1, new Uint8Array(10)))).toMatchObject({
      code: 'error.not_found',
    });
    expect(await p(admin.signUpgradeIntent(intent()), { accountId: OTHER, protocolVersion: V })).toMatchObject({
      code: 'error.not_found',
    });
    expect(
      await p(admin.signUpgradeIntent(intent()), { accountId: ACCOUNT, protocolVersion: '2026-04-01' }),
    ).toMatchObject({ code: 'error.protocol.below_album_pin' });
    expect(await p(admin.signUpgradeIntent(intent({ album_id: uuidv7(2, new Uint8Array(10)) })))).toMatchObject({
      code: 'error.album.intent_mismatch',
    });
    expect(await p(admin.signUpgradeIntent(intent({ from_version: '2026-04-01' })))).toMatchObject({
      code: 'error.album.intent_mismatch',
    });
    expect(await p(admin.signUpgradeIntent(intent({ to_version: V })))).toMatchObject({
      code: 'error.album.intent_mismatch',
    });
    expect(await p(stranger.signUpgradeIntent(intent()))).toMatchObject({ code: 'error.album.proposer_invalid' });
    expect(await p(stranger.signUpgradeIntent(intent({ proposer_device: 'admin' })))).toMatchObject({
      code: 'error.album.proposer_invalid',
    });
    expect(await p(admin.signUpgradeIntent(intent(), { tamper: 'ed25519' }))).toMatchObject({
      code: 'error.album.proposer_invalid',
    });
    expect(await p(admin.signUpgradeIntent(intent(), { tamper: 'mldsa65' }))).toMatchObject({
      code: 'error.album.proposer_invalid',
    });
    for (const over of [
      { deadline_s: Number.MAX_SAFE_INTEGER },
      { deadline_s: 7_776_001 },
      { to_version: '9999-12-31' },
      { to_version: '2026-11-02' },
    ]) {
      expect(await p(admin.signUpgradeIntent(intent(over)))).toMatchObject({ code: 'error.request.invalid' });
    }
    expect(albums.intents.size).toBe(0);
  });

  it('is idempotent on the intent, 409 for another, and a used id never lives twice', async () => {
    const { upgrades, albumId, intent, clock, uploads } = await setup();
    const first = intent({ deadline_s: 100 });
    const r1 = await upgrades.propose(caller, albumId, admin.signUpgradeIntent(first));
    expect(r1).toEqual({
      ok: true,
      value: {
        phase: 'frozen',
        intentId: first.intent_id,
        toVersion: '2026-09-01',
        expiresAt: clock.now() + 100_000,
        inFlight: 0,
      },
    });
    clock.advance(5_000);
    uploads.set(albumId, 2);
    // Re-signed (ML-DSA signatures differ each time): still the same intent, same expiry.
    expect(await upgrades.propose(caller, albumId, admin.signUpgradeIntent(first))).toMatchObject({
      ok: true,
      value: { phase: 'quiescing', expiresAt: r1.ok ? r1.value.expiresAt : 0, inFlight: 2 },
    });
    expect(
      await upgrades.propose(caller, albumId, admin.signUpgradeIntent({ ...first, deadline_s: 200 })),
    ).toMatchObject({ code: 'error.conflict' });
    const second = intent({ intent_id: uuidv7(clock.now(), new Uint8Array(10).fill(9)) });
    expect(await upgrades.propose(caller, albumId, admin.signUpgradeIntent(second))).toMatchObject({
      code: 'error.album.upgrade_in_flight',
      data: { live_intent_id: first.intent_id },
    });
    clock.advance(95_000); // exactly received_at + deadline: gone
    expect(await upgrades.status(ACCOUNT, albumId)).toEqual({
      ok: true,
      value: { phase: 'normal', intentId: null, toVersion: null, expiresAt: null, inFlight: 2 },
    });
    expect(await upgrades.propose(caller, albumId, admin.signUpgradeIntent(first))).toMatchObject({
      code: 'error.conflict',
    });
    expect(await upgrades.propose(caller, albumId, admin.signUpgradeIntent(second))).toMatchObject({
      ok: true,
      value: { intentId: second.intent_id, expiresAt: clock.now() + 604_800_000 },
    });
    expect(await upgrades.abort(caller, albumId, first.intent_id)).toMatchObject({ code: 'error.conflict' });
    expect(await upgrades.abort({ accountId: OTHER, protocolVersion: V }, albumId, second.intent_id)).toMatchObject({
      code: 'error.not_found',
    });
    expect(await upgrades.abort(caller, albumId, second.intent_id)).toEqual({ ok: true, value: undefined });
    expect(await upgrades.abort(caller, albumId, second.intent_id)).toMatchObject({ code: 'error.conflict' });
    expect(await upgrades.status(ACCOUNT, albumId)).toMatchObject({ ok: true, value: { phase: 'normal' } });
    expect(await upgrades.status(OTHER, albumId)).toMatchObject({ code: 'error.not_found' });
  });
});
