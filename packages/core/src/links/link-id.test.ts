import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AssetService } from '../assets/service.js';
import { sha256Hex, toBase64url, toHex } from '../encoding/bytes.js';
import type { Ports } from '../ports/ports.js';
import { admitAllWrites } from '../ports/write-guard.js';
import { DEFAULT_QUOTA_POLICY } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import type { SecretSealer } from '../secrets/secret-box.js';
import { FakeClock } from '../testing/fake-clock.js';
import { testLinkId } from '../testing/links.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { freshSession } from '../testing/recent-auth.js';
import { testSecretBox } from '../testing/secret-box.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { UploadService } from '../upload/service.js';
import { linkIdHash, openLinkId, sealClearLinkIds, sealLinkId } from './link-id.js';
import { LinkService } from './service.js';

const OWNER = 'owner-1';

function linksOver(ports: Ports, sealer: SecretSealer = testSecretBox()): LinkService {
  const clock = new FakeClock(1_000);
  const random = new SeededRandom(3);
  const blobs = new MemoryBlobStore();
  const quota = new QuotaService({ ledger: ports.quota, blobs, clock, random, policy: DEFAULT_QUOTA_POLICY });
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
  return new LinkService({
    links: ports.links,
    writeGuard: admitAllWrites,
    sessions: ports.quota,
    catalog: ports.quota,
    uploads,
    assets,
    quota,
    clock,
    random,
    sealer,
    recentAuth: freshSession,
  });
}

const newUploadLink = {
  kind: 'upload' as const,
  albumId: 'album-1',
  assetIds: [],
  wrappedKey: null,
  sealKey: 'c2VhbA',
  maxBytes: null,
  expiresAt: null,
  intentId: null,
  protocolVersion: '2026-11-01',
};

/** A link as an earlier build stored it: keyed by its clear id, nothing sealed. */
async function storeInClear(ports: Ports, id: string): Promise<void> {
  await ports.links.createLink({
    idHash: id,
    sealedId: null,
    ownerId: OWNER,
    kind: 'upload',
    albumId: 'album-1',
    assetIds: [],
    wrappedKey: null,
    sealKey: 'c2VhbA',
    maxBytes: null,
    acceptedBytes: 0,
    createdAt: 1,
    expiresAt: null,
    revokedAt: null,
  });
}

describe('link ids at rest', () => {
  it("the key is the SHA-256 of the id's 16 bytes; anything that is not such an id has none", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        expect(linkIdHash(toBase64url(bytes))).toBe(sha256Hex(bytes));
      }),
    );
    for (const text of [
      '',
      'L',
      toBase64url(new Uint8Array(15)),
      toBase64url(new Uint8Array(17)),
      `${testLinkId(1).slice(0, 21)}B`,
      sha256Hex('x'),
    ])
      expect(linkIdHash(text)).toBeNull();
  });

  it('a sealed id opens only on the row it was sealed for, and only under the key it was sealed with', async () => {
    const [a, b] = [testLinkId(1), testLinkId(2)];
    const sealer = testSecretBox();
    const sealedA = await sealLinkId(sealer, a, linkIdHash(a)!);
    expect(await openLinkId(sealer, { idHash: linkIdHash(a)!, sealedId: sealedA })).toBe(a);
    // Moved onto another link's row, it does not open there.
    await expect(openLinkId(sealer, { idHash: linkIdHash(b)!, sealedId: sealedA })).rejects.toMatchObject({
      code: 'error.internal',
    });
    // Sealed for the other row's hash but holding this id: it does not reach that row, so it is refused.
    await expect(
      openLinkId(sealer, { idHash: linkIdHash(b)!, sealedId: await sealLinkId(sealer, a, linkIdHash(b)!) }),
    ).rejects.toMatchObject({ code: 'error.internal' });
    const otherKey = { seal: sealer.seal.bind(sealer), open: async () => null };
    await expect(openLinkId(otherKey, { idHash: linkIdHash(a)!, sealedId: sealedA })).rejects.toMatchObject({
      code: 'error.internal',
    });
    await expect(openLinkId(sealer, { idHash: linkIdHash(a)!, sealedId: null })).rejects.toMatchObject({
      code: 'error.internal',
    });
    // No message names the id or its hash.
    const err = await openLinkId(sealer, { idHash: linkIdHash(b)!, sealedId: sealedA }).catch((e: Error) => e);
    expect(String((err as Error).message)).not.toContain(a);
    expect(String((err as Error).message)).not.toContain(linkIdHash(b)!);
  });

  it('a created link is stored under its hash with its id sealed, never the id; it is reached by its id alone and listed with it', async () => {
    const ports = createMemoryPorts();
    const service = linksOver(ports);
    const created = await service.create({ accountId: OWNER, sessionId: 's' }, newUploadLink);
    if (!created.ok) throw new Error(created.code);
    const id = created.value.id;
    const stored = await ports.links.findLink(linkIdHash(id)!);
    expect(stored).not.toBeNull();
    const raw = new Uint8Array(Buffer.from(id, 'base64url'));
    const text = JSON.stringify(stored);
    for (const form of [id, Buffer.from(raw).toString('base64'), toHex(raw)]) expect(text).not.toContain(form);
    expect((await service.read(id)).ok).toBe(true);
    expect(await service.read(stored!.idHash)).toMatchObject({ ok: false, code: 'error.not_found' });
    expect((await service.list({ accountId: OWNER })).map((l) => l.id)).toEqual([id]);
    expect(
      (await service.openDrop(id, { declaredSize: 10, contentHash: null, protocolVersion: '2026-11-01' })).ok,
    ).toBe(true);
    expect(await service.drops({ accountId: OWNER }, id)).toMatchObject({ ok: true, value: [{ state: 'uploading' }] });
    expect((await service.revoke({ accountId: OWNER }, id)).ok).toBe(true);
    expect(await service.read(id)).toMatchObject({ ok: false, code: 'error.not_found' });
  });

  it('links an earlier build stored in clear move to their hash at start, drops and sessions with them; a second start finds nothing', async () => {
    const ports = createMemoryPorts();
    const [first, second] = [testLinkId(5), testLinkId(6)];
    await storeInClear(ports, first);
    await storeInClear(ports, second);
    const drop = {
      id: 'drop-1',
      uploaderId: OWNER,
      kind: 'original' as const,
      declaredSize: 10,
      contentHash: null,
      sourcePeer: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash: first,
      createdAt: 1,
      expiresAt: 60_000,
    };
    expect((await ports.quota.openDrop(drop, 'ab'.repeat(32), DEFAULT_QUOTA_POLICY, 1)).ok).toBe(true);
    const service = linksOver(ports);
    expect(await service.sealClearIds()).toBe(2);
    expect(await ports.links.listClearLinkIds()).toEqual([]);
    for (const id of [first, second]) {
      expect(await ports.links.findLink(id)).toBeNull();
      expect((await service.read(id)).ok).toBe(true);
    }
    expect((await service.list({ accountId: OWNER })).map((l) => l.id).sort()).toEqual([first, second].sort());
    expect(await ports.links.findDrop('drop-1')).toMatchObject({ linkIdHash: linkIdHash(first) });
    expect((await ports.quota.findUpload('drop-1'))!.dropLinkIdHash).toBe(linkIdHash(first));
    expect(await service.drops({ accountId: OWNER }, first)).toMatchObject({
      ok: true,
      value: [{ uploadId: 'drop-1' }],
    });
    expect(await service.sealClearIds()).toBe(0);
  });

  it('a start that stops midway leaves each link moved or in clear, and the next start moves the rest', async () => {
    const ports = createMemoryPorts();
    const ids = [testLinkId(7), testLinkId(8), testLinkId(9)];
    for (const id of ids) await storeInClear(ports, id);
    const box = testSecretBox();
    let seals = 0;
    const failing: SecretSealer = {
      seal: (secret, context) => (++seals === 2 ? Promise.reject(new Error('crash')) : box.seal(secret, context)),
      open: (sealed, context) => box.open(sealed, context),
    };
    await expect(sealClearLinkIds({ links: ports.links, sessions: ports.quota }, failing)).rejects.toThrow('crash');
    expect((await ports.links.listClearLinkIds()).length).toBe(2);
    expect(await sealClearLinkIds({ links: ports.links, sessions: ports.quota }, box)).toBe(2);
    const service = linksOver(ports, box);
    for (const id of ids) expect((await service.read(id)).ok).toBe(true);
    expect((await service.list({ accountId: OWNER })).map((l) => l.id).sort()).toEqual([...ids].sort());
  });

  it('a clear id that is not a link id stops the start without naming it', async () => {
    const ports = createMemoryPorts();
    await storeInClear(ports, 'not-a-link-id');
    const err = await sealClearLinkIds({ links: ports.links, sessions: ports.quota }, testSecretBox()).catch(
      (e: Error) => e,
    );
    expect(err).toMatchObject({ code: 'error.internal' });
    expect((err as Error).message).not.toContain('not-a-link-id');
  });
});
