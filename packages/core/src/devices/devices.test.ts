import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { canonicalCbor, decodeCanonicalCbor } from '../encoding/cbor.js';
import { fromBase64url } from '../encoding/bytes.js';
import { FakeClock, MemoryDeviceStore, SeededRandom, TestDevice, TestIdentity } from '../testing/index.js';
import { DeviceDirectoryService } from './service.js';
import { MAX_LIVE_REVOKE_ALL_CHALLENGES, RevokeAllService } from './revoke-all.js';

/** These tests are about directories, not sessions: every caller signed in just now. */
const RECENT = { requireRecentAuthentication: async () => ({ ok: true as const, value: undefined }) };

const ACCOUNT = '0190a000-0000-7000-8000-000000000001';
const OTHER = '0190a000-0000-7000-8000-000000000002';
const phone = new TestDevice('phone');
const laptop = new TestDevice('laptop');
const SMALL_ORDER = fromHexStrict('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa');

function fromHexStrict(h: string): Uint8Array {
  return Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16)));
}

/** Rewrites `"seq": 1` with a needlessly long head. */
function longHeadSeq(body: Uint8Array): Uint8Array {
  const hex = Buffer.from(body)
    .toString('hex')
    .replace('63736571' + '01', '63736571' + '1801');
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

function setup() {
  const clock = new FakeClock();
  const store = new MemoryDeviceStore();
  return { clock, store, service: new DeviceDirectoryService({ directories: store, clock, sessions: RECENT }) };
}

describe('device directory', () => {
  const id = new TestIdentity('alice');

  it('fixing the first identity anchor asks the recent-authentication gate; later publications do not', async () => {
    const clock = new FakeClock();
    const store = new MemoryDeviceStore();
    const asked: string[] = [];
    let recent = false;
    const sessions = {
      requireRecentAuthentication: async (_p: unknown, change: string) => {
        asked.push(change);
        return recent
          ? ({ ok: true, value: undefined } as const)
          : ({ ok: false, code: 'error.auth.reauthentication_required' } as const);
      },
    };
    const service = new DeviceDirectoryService({ directories: store, clock, sessions });
    const me = { accountId: ACCOUNT, sessionId: 'session' };
    expect(await service.publish(me, id.signDirectory(ACCOUNT, 1, [phone]))).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    expect(await store.findIdentityAnchor(ACCOUNT)).toBeNull();
    recent = true;
    expect((await service.publish(me, id.signDirectory(ACCOUNT, 1, [phone]))).ok).toBe(true);
    recent = false;
    expect((await service.publish(me, id.signDirectory(ACCOUNT, 2, [phone]))).ok).toBe(true);
    expect(asked).toEqual(['first_identity_anchor', 'first_identity_anchor']);
  });

  it('the first accepted directory fixes the anchor; GET returns the accepted bytes', async () => {
    const { service, store } = setup();
    const body = id.signDirectory(ACCOUNT, 1, [phone]);
    const r = await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, body);
    expect(r.ok).toBe(true);
    expect((await service.current(ACCOUNT))?.body).toEqual(body);
    expect(await store.findIdentityAnchor(ACCOUNT)).toEqual(id.publicKey);
  });

  it('later directories need the same identity key and a higher seq', async () => {
    const { service } = setup();
    await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(ACCOUNT, 5, [phone]));
    const other = new TestIdentity('mallory');
    expect(
      await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, other.signDirectory(ACCOUNT, 9, [phone])),
    ).toMatchObject({ ok: false, code: 'error.device.directory_invalid' });
    expect(
      await service.publish(
        { accountId: ACCOUNT, sessionId: 'session' },
        id.signDirectory(ACCOUNT, 5, [phone, laptop]),
      ),
    ).toMatchObject({ ok: false, code: 'error.conflict', data: { current_seq: 5 } });
    expect(
      await service.publish(
        { accountId: ACCOUNT, sessionId: 'session' },
        id.signDirectory(ACCOUNT, 4, [phone, laptop]),
      ),
    ).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(
      (
        await service.publish(
          { accountId: ACCOUNT, sessionId: 'session' },
          id.signDirectory(ACCOUNT, 6, [phone, laptop]),
        )
      ).ok,
    ).toBe(true);
    expect((await service.current(ACCOUNT))?.devices.map((d) => d.deviceId)).toEqual(['phone', 'laptop']);
  });

  it('refuses a signature made for another account or over other content', async () => {
    const { service } = setup();
    expect(
      await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(OTHER, 1, [phone])),
    ).toMatchObject({ ok: false, code: 'error.device.directory_invalid' });
    const value = decodeCanonicalCbor(id.signDirectory(ACCOUNT, 1, [phone])) as Record<string, unknown>;
    const tampered = canonicalCbor({ ...value, seq: 2 });
    expect(await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, tampered)).toMatchObject({
      ok: false,
      code: 'error.device.directory_invalid',
    });
    expect(await service.current(ACCOUNT)).toBeNull();
  });

  it('refuses small-order or non-canonical Ed25519 keys and wrong-length ML-DSA keys', async () => {
    const { service } = setup();
    const cases = [
      { ...phone.entry(), ed25519: SMALL_ORDER },
      { ...phone.entry(), ed25519: fromHexStrict('ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f') },
      { ...phone.entry(), mldsa65: phone.mldsa65.subarray(0, 1951) },
      { ...phone.entry(), mldsa65: new Uint8Array([...phone.mldsa65, 0]) },
    ];
    for (const entry of cases) {
      expect(
        await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(ACCOUNT, 1, [entry])),
      ).toMatchObject({ ok: false, code: 'error.device.invalid_key' });
    }
    const value = decodeCanonicalCbor(id.signDirectory(ACCOUNT, 1, [phone])) as Record<string, unknown>;
    expect(
      await service.publish(
        { accountId: ACCOUNT, sessionId: 'session' },
        canonicalCbor({ ...value, identity_key: SMALL_ORDER }),
      ),
    ).toMatchObject({ code: 'error.device.invalid_key' });
    expect(await service.current(ACCOUNT)).toBeNull();
  });

  it('refuses malformed and non-canonical bodies as request.invalid', async () => {
    const { service } = setup();
    const good = decodeCanonicalCbor(id.signDirectory(ACCOUNT, 1, [phone])) as Record<string, unknown>;
    const bodies = [
      new Uint8Array([0xff]),
      canonicalCbor([1, 2]),
      canonicalCbor({ ...good, extra: 1 }),
      canonicalCbor({ ...good, seq: -1 }),
      canonicalCbor({ ...good, seq: 1.5 }),
      canonicalCbor({ ...good, devices: [phone.entry(), phone.entry()] }),
      canonicalCbor({ ...good, devices: [{ ...phone.entry(), device_id: '' }] }),
      canonicalCbor({ ...good, devices: [{ ...phone.entry(), added_at: 'now' }] }),
      canonicalCbor({ ...good, sig: new Uint8Array(63) }),
      // Same content with seq's head in two bytes (0x18 0x01): valid CBOR, not deterministic.
      longHeadSeq(id.signDirectory(ACCOUNT, 1, [phone])),
      // Keys in reverse order.
      encode(good, {
        mapSorter: (a: [{ value: string }], b: [{ value: string }]) => (a[0].value < b[0].value ? 1 : -1),
      } as never),
    ];
    for (const b of bodies)
      expect(await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, b)).toMatchObject({
        ok: false,
        code: 'error.request.invalid',
      });
  });

  it('a device is active only once added_at has arrived on the server clock', async () => {
    const { service, clock } = setup();
    const late = new TestDevice('late', { addedAt: Math.floor(clock.now() / 1000) + 60 });
    await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(ACCOUNT, 1, [phone, late]));
    expect(await service.activeDevice(ACCOUNT, 'phone', clock.now())).not.toBeNull();
    expect(await service.activeDevice(ACCOUNT, 'late', clock.now())).toBeNull();
    expect(await service.activeDevice(ACCOUNT, 'late', late.addedAt * 1000 - 1)).toBeNull();
    expect(await service.activeDevice(ACCOUNT, 'late', late.addedAt * 1000)).not.toBeNull();
    expect(await service.activeDevice(ACCOUNT, 'nobody', clock.now())).toBeNull();
    expect(await service.activeDevice(OTHER, 'phone', clock.now())).toBeNull();
  });
});

describe('revoke-all', () => {
  const id = new TestIdentity('alice');
  async function setupRevoke() {
    const { clock, store, service } = setup();
    let closed = 0;
    const sessions = { closeAll: async (accountId: string) => (accountId === ACCOUNT ? ++closed && 3 : 0) };
    const revoke = new RevokeAllService({
      challenges: store,
      directories: store,
      sessions,
      clock,
      random: new SeededRandom(9),
    });
    return { clock, store, service, revoke, closedCalls: () => closed };
  }
  const issued = async (revoke: RevokeAllService) => {
    const r = await revoke.issueChallenge(ACCOUNT);
    if (!r.ok) throw new Error(r.code);
    return r.value;
  };
  const sign = (accountId: string, challenge: string, by = id) =>
    by.signLogoutAll(accountId, fromBase64url(challenge)!);

  it('closes every session with a proof by the anchor, once', async () => {
    const { service, revoke, closedCalls } = await setupRevoke();
    await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(ACCOUNT, 1, [phone]));
    const { challenge, expiresIn } = await issued(revoke);
    expect(expiresIn).toBe(300);
    expect(fromBase64url(challenge)?.length).toBe(32);
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toEqual({
      ok: true,
      value: { sessionsClosed: 3 },
    });
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toMatchObject({
      ok: false,
      code: 'error.auth.proof_invalid',
    });
    expect(closedCalls()).toBe(1);
  });

  it('every failure is the same refusal and burns the challenge', async () => {
    const { service, revoke, clock, closedCalls } = await setupRevoke();
    await service.publish({ accountId: ACCOUNT, sessionId: 'session' }, id.signDirectory(ACCOUNT, 1, [phone]));
    const refusal = { ok: false, code: 'error.auth.proof_invalid', detail: 'The proof is not valid.' };
    // Wrong key (a device key is not the anchor), then the right one: burned already.
    let { challenge } = await issued(revoke);
    expect(
      await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge, new TestIdentity('mallory')) }),
    ).toEqual(refusal);
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toEqual(refusal);
    // Signed for another account.
    ({ challenge } = await issued(revoke));
    expect(await revoke.redeem({ challenge, signature: sign(OTHER, challenge) })).toEqual(refusal);
    // Malformed signature burns too.
    ({ challenge } = await issued(revoke));
    expect(await revoke.redeem({ challenge, signature: '!!' })).toEqual(refusal);
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toEqual(refusal);
    // Expired exactly at 300 s.
    ({ challenge } = await issued(revoke));
    clock.advance(300_000);
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toEqual(refusal);
    // Unknown and malformed challenges.
    expect(await revoke.redeem({ challenge: 'A'.repeat(43), signature: sign(ACCOUNT, challenge) })).toEqual(refusal);
    expect(await revoke.redeem({ challenge: 'short', signature: 'x' })).toEqual(refusal);
    expect(closedCalls()).toBe(0);
    // Just inside the window works.
    ({ challenge } = await issued(revoke));
    clock.advance(299_999);
    expect((await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).ok).toBe(true);
  });

  it('keeps at most 5 live challenges per account: the 6th is refused with when a slot frees, and nothing is stored', async () => {
    const { revoke, clock, store } = await setupRevoke();
    for (let i = 0; i < MAX_LIVE_REVOKE_ALL_CHALLENGES; i++) {
      await issued(revoke);
      clock.advance(10_000);
    }
    const stored = store.challenges.size;
    // The oldest was issued 50 s ago and lives 300 s: a slot frees in 250 s.
    expect(await revoke.issueChallenge(ACCOUNT)).toMatchObject({
      ok: false,
      code: 'error.request.too_many',
      data: { retry_after_s: 250 },
    });
    expect(store.challenges.size).toBe(stored);
    // Another account is not held by this one's.
    expect((await revoke.issueChallenge(OTHER)).ok).toBe(true);
    clock.advance(250_000);
    expect((await revoke.issueChallenge(ACCOUNT)).ok).toBe(true);
    expect(await revoke.issueChallenge(ACCOUNT)).toMatchObject({
      ok: false,
      code: 'error.request.too_many',
      data: { retry_after_s: 10 },
    });
  });

  it('an account without an anchor cannot redeem', async () => {
    const { revoke } = await setupRevoke();
    const { challenge } = await issued(revoke);
    expect(await revoke.redeem({ challenge, signature: sign(ACCOUNT, challenge) })).toMatchObject({
      ok: false,
      code: 'error.auth.proof_invalid',
    });
  });
});
