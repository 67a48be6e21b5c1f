import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { admitAllWrites } from '../ports/write-guard.js';
import { AssetService } from '../assets/service.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { UploadService } from '../upload/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';

/**
 * The services ask the access rule, not the payer: over the memory ports, S is paid for by Alice
 * (so before the rule, "same payer" let S reach Alice's asset and Alice reach S's). The HTTP
 * version of this, on SQLite and PostgreSQL, is apps/server/src/system-tests/properties/isolation.test.ts.
 */

const ALICE = '0190c000-0000-7000-8000-00000000000a';
const S = '0190c000-0000-7000-8000-00000000000b';
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: 1_000_000 },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

const PUT = { protocolVersion: '2026-06-01' };
const WRITE = { protocolVersion: '2026-06-01', intentId: null };

async function services() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(7);
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
    ttlMs: 60_000,
    dropTtlMs: 60_000,
    federationPeers: [],
  });
  const assets = new AssetService({
    assets: ports.quota,
    quota,
    sessions: ports.quota,
    writeGuard: admitAllWrites,
    clock,
  });
  const sponsored = await ports.sponsorship.setSponsor(S, ALICE);
  if (!sponsored.ok) throw new Error('sponsor');
  /** A stored original of `owner`'s: its asset id. */
  const asset = async (owner: string, fill: number): Promise<string> => {
    const data = new Uint8Array(32).fill(fill);
    const u = await uploads.create(
      { accountId: owner },
      {
        declaredSize: 32,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      },
    );
    if (!u.ok) throw new Error(u.code);
    async function* body() {
      yield data;
    }
    expect((await uploads.put({ accountId: owner }, u.value.uploadId, body(), PUT)).ok).toBe(true);
    expect(
      (
        await uploads.finalize({ accountId: owner }, u.value.uploadId, {
          protocolVersion: '2026-06-01',
          contentHash: sha256Hex(data),
          manifest: null,
        })
      ).ok,
    ).toBe(true);
    return u.value.uploadId;
  };
  return { uploads, assets, asset };
}

describe('services decide access with the rule, not the payer (memory ports)', () => {
  it("acting as S reaches none of Alice's assets, and Alice none of S's", async () => {
    const { assets, asset } = await services();
    const alices = await asset(ALICE, 1);
    const ss = await asset(S, 2);
    for (const [who, id] of [
      [S, alices],
      [ALICE, ss],
    ] as const) {
      const caller = { accountId: who };
      expect(await assets.get(caller, id)).toMatchObject({ ok: false, code: 'error.not_found' });
      expect(await assets.trash(caller, id, WRITE)).toMatchObject({ ok: false, code: 'error.not_found' });
      expect(await assets.replaceMetadata(caller, id, new Uint8Array(8), WRITE)).toMatchObject({
        ok: false,
        code: 'error.not_found',
      });
    }
    expect((await assets.get({ accountId: ALICE }, alices)).ok).toBe(true);
    expect((await assets.get({ accountId: S }, ss)).ok).toBe(true);
  });

  it("a derivative cannot be attached to another account's asset, however it is paid for", async () => {
    const { uploads, asset } = await services();
    const alices = await asset(ALICE, 3);
    const data = new Uint8Array(16).fill(4);
    const u = await uploads.create(
      { accountId: S },
      {
        declaredSize: 16,
        kind: 'derivative',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      },
    );
    if (!u.ok) throw new Error(u.code);
    async function* body() {
      yield data;
    }
    expect((await uploads.put({ accountId: S }, u.value.uploadId, body(), PUT)).ok).toBe(true);
    expect(
      await uploads.finalize({ accountId: S }, u.value.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(data),
        manifest: { assetId: alices, intentId: null },
      }),
    ).toMatchObject({ ok: false, code: 'error.not_found' });
    // Nor can Alice read or cancel S's upload session.
    expect(await uploads.get({ accountId: ALICE }, u.value.uploadId)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    expect(await uploads.cancel({ accountId: ALICE }, u.value.uploadId)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
  });

  it('a guest principal sends its own upload and does not read it', async () => {
    const { uploads } = await services();
    const u = await uploads.create(
      { accountId: ALICE },
      {
        declaredSize: 8,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      },
    );
    if (!u.ok) throw new Error(u.code);
    const guest = { accountId: ALICE, guestUploadId: u.value.uploadId };
    expect(await uploads.get(guest, u.value.uploadId)).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(await uploads.cancel(guest, u.value.uploadId)).toMatchObject({ ok: false, code: 'error.not_found' });
    async function* body() {
      yield new Uint8Array(8);
    }
    expect((await uploads.put(guest, u.value.uploadId, body(), PUT)).ok).toBe(true);
    expect(
      await uploads.create(guest, {
        declaredSize: 8,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      }),
    ).toMatchObject({ ok: false, code: 'error.not_found' });
  });
});
