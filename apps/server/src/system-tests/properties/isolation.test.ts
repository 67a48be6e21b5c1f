import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type CallOptions } from '@strongroom/tests';
import {
  as,
  fresh,
  guestOf,
  Maker,
  makeWorld,
  pgBackend,
  raw,
  sha,
  sqliteBackend,
  WRAPPED,
  type Backend,
  type World,
} from '@strongroom/tests/access';

/**
 * Sharing a payer grants no access (spec §8.1): a co-owner of a sponsored account never reaches the
 * sponsor's own assets, though both are charged to the sponsor. The rule (packages/core/src/access/rules.ts, `mayReach`): an
 * object is reached only by a request acting as the account it belongs to. Alice sponsors S and S2
 * and added Bob as an owner of S.
 */

const missing = { status: 404, body: expect.objectContaining({ code: 'error.not_found' }) };

for (const open of [sqliteBackend, pgBackend]) {
  describe(`object-level access over HTTP (${open === sqliteBackend ? 'SQLite' : 'PostgreSQL'})`, {
    timeout: 60_000,
  }, () => {
    let b: Backend;
    let w: World;
    let make: Maker;
    beforeAll(async () => {
      b = await open();
      w = await makeWorld(b.app);
      make = new Maker(b.app);
    }, 60_000);
    afterAll(async () => {
      await b?.close();
    });

    /** Every way Bob (or anyone in `intruder`) could touch the asset; each must be 404 and change nothing. */
    async function cannotReachAsset(intruder: CallOptions, owner: CallOptions, assetId: string): Promise<void> {
      const before = await b.dump();
      expect(await call(b.app, 'GET', `/v1/assets/${assetId}`, intruder)).toMatchObject(missing);
      expect(
        await call(b.app, 'PUT', `/v1/assets/${assetId}/metadata`, {
          ...intruder,
          raw: raw(fresh(16)),
          contentType: 'application/octet-stream',
        }),
      ).toMatchObject(missing);
      expect(await call(b.app, 'POST', `/v1/assets/${assetId}/trash`, intruder)).toMatchObject(missing);
      expect(await call(b.app, 'POST', `/v1/assets/${assetId}/restore`, intruder)).toMatchObject(missing);
      expect(await call(b.app, 'DELETE', `/v1/assets/${assetId}`, intruder)).toMatchObject(missing);
      expect(
        await call(b.app, 'POST', '/v1/links', {
          ...intruder,
          body: { kind: 'share', asset_ids: [assetId], wrapped_key: WRAPPED },
        }),
      ).toMatchObject(missing);
      expect(await b.dump()).toEqual(before);
      // A derivative attached to it: the intruder's own upload, refused at finalize, stays open.
      const d = await make.receivedUpload(intruder, { kind: 'derivative' });
      const between = await b.dump();
      expect(
        await call(b.app, 'POST', `/upload/${d.uploadId}/finalize`, {
          ...intruder,
          body: { content_hash: sha(d.data), manifest: { asset_id: assetId } },
        }),
      ).toMatchObject(missing);
      expect(await b.dump()).toEqual(between);
      // The same asset once trashed: restore and purge are refused too.
      expect((await call(b.app, 'POST', `/v1/assets/${assetId}/trash`, owner)).status).toBe(200);
      const trashed = await b.dump();
      expect(await call(b.app, 'POST', `/v1/assets/${assetId}/restore`, intruder)).toMatchObject(missing);
      expect(await call(b.app, 'DELETE', `/v1/assets/${assetId}`, intruder)).toMatchObject(missing);
      expect(await b.dump()).toEqual(trashed);
      // The owner still reaches it.
      expect(await call(b.app, 'GET', `/v1/assets/${assetId}`, owner)).toMatchObject({
        status: 200,
        body: { asset_id: assetId, state: 'trashed' },
      });
    }

    it("Bob acting as S reaches none of Alice's own assets", async () => {
      const alice = as(w.alice.token);
      await cannotReachAsset(as(w.bob.token, w.s), alice, await make.asset(alice));
    });

    it("Bob acting as S reaches none of the sibling S2's assets", async () => {
      const aliceAsS2 = as(w.alice.token, w.s2);
      await cannotReachAsset(as(w.bob.token, w.s), aliceAsS2, await make.asset(aliceAsS2));
    });

    it("Alice without act-as reaches none of S's assets (nor does Alice acting as S2)", async () => {
      const bobAsS = as(w.bob.token, w.s);
      await cannotReachAsset(as(w.alice.token), bobAsS, await make.asset(bobAsS));
      await cannotReachAsset(as(w.alice.token, w.s2), bobAsS, await make.asset(bobAsS));
    });

    it("Alice without act-as reaches none of S's other objects: uploads, fills, albums, links, drops", async () => {
      const bobAsS = as(w.bob.token, w.s);
      const alice = as(w.alice.token);
      const upload = await make.receivedUpload(bobAsS);
      const fill = await make.fill(bobAsS, true);
      const album = await make.album(bobAsS);
      const link = await make.shareLink(bobAsS);
      const drop = await make.drop(bobAsS, true);
      const before = await b.dump();
      for (const id of [upload.uploadId, fill.uploadId]) {
        expect(await call(b.app, 'GET', `/upload/${id}`, alice)).toMatchObject(missing);
        expect(
          await call(b.app, 'PUT', `/upload/${id}`, {
            ...alice,
            raw: raw(upload.data),
            contentType: 'application/octet-stream',
          }),
        ).toMatchObject(missing);
        expect(
          await call(b.app, 'POST', `/upload/${id}/finalize`, {
            ...alice,
            body: { content_hash: sha(id === fill.uploadId ? fill.data : upload.data) },
          }),
        ).toMatchObject(missing);
        expect(await call(b.app, 'DELETE', `/upload/${id}`, alice)).toMatchObject(missing);
      }
      expect(
        await call(b.app, 'GET', `/v1/albums/${album}/upgrade`, { ...alice, version: '2026-06-01' }),
      ).toMatchObject(missing);
      expect(
        await call(b.app, 'POST', '/v1/links', {
          ...alice,
          body: { kind: 'upload', album_id: album, seal_key: WRAPPED },
        }),
      ).toMatchObject(missing);
      expect(await call(b.app, 'DELETE', `/v1/links/${link}`, alice)).toMatchObject(missing);
      expect(await call(b.app, 'GET', `/v1/links/${drop.linkId}/drops`, alice)).toMatchObject(missing);
      expect(await call(b.app, 'POST', `/v1/drops/${drop.uploadId}/adopt`, alice)).toMatchObject(missing);
      expect(await call(b.app, 'DELETE', `/v1/drops/${drop.uploadId}`, alice)).toMatchObject(missing);
      // Her own upload into S's album, and emptying her own trash, leave S's album and trash alone.
      expect(
        await call(b.app, 'POST', '/upload', {
          ...alice,
          body: { device_id: 'phone', kind: 'original', declared_size: 10, album_id: album },
          version: '2026-06-01',
        }),
      ).toMatchObject(missing);
      expect(await b.dump()).toEqual(before);
      const trashed = await make.trashedAsset(bobAsS);
      expect((await call(b.app, 'POST', '/v1/trash/empty', alice)).status).toBe(200);
      expect(await call(b.app, 'GET', `/v1/assets/${trashed}`, bobAsS)).toMatchObject({
        status: 200,
        body: { state: 'trashed' },
      });
      // Acting as S she reaches them: the refusals above were about the account, not the objects.
      expect((await call(b.app, 'GET', `/upload/${upload.uploadId}`, as(w.alice.token, w.s))).status).toBe(200);
      expect((await call(b.app, 'POST', `/v1/drops/${drop.uploadId}/adopt`, as(w.alice.token, w.s))).status).toBe(200);
    });

    it('under concurrency: intruders racing the owner on one asset are all refused, and only the owner changes it', async () => {
      const alice = as(w.alice.token);
      const id = await make.asset(alice);
      const intruders = [as(w.bob.token, w.s), as(w.alice.token, w.s), as(w.alice.token, w.s2), as(w.carol.token)];
      const attempts = intruders.flatMap((o) => [
        call(b.app, 'POST', `/v1/assets/${id}/trash`, o),
        call(b.app, 'POST', `/v1/assets/${id}/restore`, o),
        call(b.app, 'DELETE', `/v1/assets/${id}`, o),
        call(b.app, 'GET', `/v1/assets/${id}`, o),
      ]);
      const owner = call(b.app, 'POST', `/v1/assets/${id}/trash`, alice);
      const [mine, ...theirs] = await Promise.all([owner, ...attempts]);
      expect(mine!.status).toBe(200);
      for (const r of theirs) expect(r).toMatchObject(missing);
      expect(await call(b.app, 'GET', `/v1/assets/${id}`, alice)).toMatchObject({
        status: 200,
        body: { state: 'trashed' },
      });
    });

    it('a guest token reaches only its own drop, to send and finalize, never to read or cancel', async () => {
      const alice = as(w.alice.token);
      const drop = await make.drop(alice);
      const other = await make.receivedUpload(alice);
      const guest = guestOf(drop.uploadToken);
      const before = await b.dump();
      expect((await call(b.app, 'GET', `/upload/${drop.uploadId}`, guest)).status).toBe(401);
      expect((await call(b.app, 'DELETE', `/upload/${drop.uploadId}`, guest)).status).toBe(401);
      expect(
        (
          await call(b.app, 'PUT', `/upload/${other.uploadId}`, {
            ...guest,
            raw: raw(other.data),
            contentType: 'application/octet-stream',
          })
        ).status,
      ).toBe(401);
      expect(
        (
          await call(b.app, 'POST', `/upload/${other.uploadId}/finalize`, {
            ...guest,
            body: { content_hash: sha(other.data) },
          })
        ).status,
      ).toBe(401);
      expect(await b.dump()).toEqual(before);
      await make.put(guest, drop.uploadId, drop.data);
      expect(
        (
          await call(b.app, 'POST', `/upload/${drop.uploadId}/finalize`, {
            ...guest,
            body: { content_hash: sha(drop.data) },
          })
        ).status,
      ).toBe(200);
    });
  });
}
