import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from '@strongroom/tests';
import { DeviceKeys, IdentityKey, StrongroomClient, StrongroomError, type SyncPage } from './index.js';

// The client's sync, album listing and link listing against a real app (real SQLite, fake clock).

let s: TestServer;
let sent: string[];
let n = 0;
const DAY_MS = 86_400_000;
const PASSWORD = 'correct horse battery staple';

beforeEach(async () => {
  s = await testServer({ SVC_SYNC_TOMBSTONE_DAYS: '1' });
  sent = [];
});
afterEach(async () => {
  await s.close();
});

function newClient() {
  return new StrongroomClient({
    baseUrl: 'http://127.0.0.1:8080',
    fetch: async (request) => {
      const url = new URL(request.url);
      sent.push(url.pathname + url.search);
      return s.app.fetch(request);
    },
  });
}

/** A signed-in device with a published directory listing `phone-1`. */
async function device(address = `sync${++n}@example.org`) {
  const client = newClient();
  await client.register(address, PASSWORD);
  const identity = IdentityKey.generate();
  const entry = DeviceKeys.generate('phone-1').entry(Math.floor(s.clock.now() / 1000) - 60);
  await client.publishDirectory(identity.signDirectory(client.accountId!, 1, [entry]));
  return { client, address };
}

/** Applies pages as an app would: a restarted page first drops everything held. */
async function replay(pages: AsyncIterable<SyncPage & { restarted: boolean }>, held = new Map<string, unknown>()) {
  let cursor: string | null = null;
  let restarts = 0;
  for await (const page of pages) {
    if (page.restarted) {
      held.clear();
      restarts++;
    }
    for (const c of page.changes) {
      if (c.op === 'remove') held.delete(`${c.kind}:${c.id}`);
      else held.set(`${c.kind}:${c.id}`, c.record);
    }
    cursor = page.cursor;
  }
  return { held, cursor, restarts };
}

describe('client.sync()', () => {
  it('a second device pages the library, keeps its cursor, and after the horizon starts again cleanly', async () => {
    const { client, address } = await device();
    const albumId = (await client.api.POST('/v1/albums', { body: { device_id: 'phone-1' } })).data!.album_id;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await client.upload(new Uint8Array(8).fill(i + 1), { deviceId: 'phone-1', albumId })).uploadId);
    expect((await client.albums()).map((a) => [a.album_id, a.asset_count])).toEqual([[albumId, 5]]);

    const second = newClient();
    await second.signIn(address, PASSWORD);
    const first = await replay(second.sync({ limit: 2 }));
    expect([...first.held.keys()].sort()).toEqual([`album:${albumId}`, ...ids.map((id) => `asset:${id}`)].sort());
    expect(sent.filter((p) => p.startsWith('/v1/sync')).length).toBe(3);

    await client.api.POST('/v1/assets/{id}/trash', { params: { path: { id: ids[0]! } } });
    const next = await replay(second.sync({ cursor: first.cursor }), first.held);
    expect(next.restarts).toBe(0);
    expect(next.held.get(`asset:${ids[0]}`)).toMatchObject({ state: 'trashed' });
    expect(next.held.get(`album:${albumId}`)).toMatchObject({ asset_count: 4 });

    // Past the tombstone horizon the cursor is refused (410): the iterator lists again from scratch.
    s.clock.advance(DAY_MS + 1);
    const again = await replay(second.sync({ cursor: next.cursor }), next.held);
    expect(again.restarts).toBe(1);
    expect([...again.held.keys()].sort()).toEqual([...next.held.keys()].sort());
  });

  it('another error is thrown, not swallowed', async () => {
    const { client } = await device();
    await expect(replay(client.sync({ cursor: 'v1.not.ours' }))).rejects.toMatchObject({
      code: 'error.request.invalid',
    });
  });
});

describe('client.linkAssets()', () => {
  it('lists what a share link covers, without an account; a revoked link is error.not_found', async () => {
    const { client } = await device();
    const albumId = (await client.api.POST('/v1/albums', { body: { device_id: 'phone-1' } })).data!.album_id;
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await client.upload(new Uint8Array(8).fill(40 + i), { deviceId: 'phone-1', albumId })).uploadId);
    const link = (
      await client.api.POST('/v1/links', { body: { kind: 'share', album_id: albumId, wrapped_key: 'a2V5' } })
    ).data!.link_id;
    const recipient = newClient();
    const listed: string[] = [];
    for await (const page of recipient.linkAssets(link, { limit: 2 }))
      for (const c of page.changes) listed.push(c.record.asset_id);
    expect(listed).toEqual([...ids].sort());
    await client.api.DELETE('/v1/links/{link_id}', { params: { path: { link_id: link } } });
    const gone = (async () => {
      for await (const _ of recipient.linkAssets(link)) void _;
    })();
    await expect(gone).rejects.toBeInstanceOf(StrongroomError);
    await expect(gone).rejects.toMatchObject({ code: 'error.not_found' });
  });
});
