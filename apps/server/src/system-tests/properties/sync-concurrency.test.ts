import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type CallOptions } from '@strongroom/tests';
import {
  as,
  Maker,
  makeWorld,
  pgBackend,
  sha,
  sqliteBackend,
  type Backend,
  type World,
} from '@strongroom/tests/access';

/**
 * Library sync over HTTP with concurrent writers (spec §13.3): two owners write
 * to one sponsored account at once (and its sponsor to its own), while devices of each page with
 * small limits. Once every writer is done and a device reads to the end, it holds exactly the
 * account's live objects, each as GET answers it: no write committed while it paged was lost.
 * On SQLite, and on PostgreSQL when PG_URL names one (there the writers' transactions commit out of
 * the order they began: the per-account sequence is what keeps them in commit order).
 */

type Change = { kind: string; id: string; op: string; record: Record<string, unknown> | null };

class Device {
  cursor: string | null = null;
  readonly held = new Map<string, Record<string, unknown>>();
  constructor(
    readonly b: Backend,
    readonly o: CallOptions,
  ) {}
  async page(limit: number): Promise<boolean> {
    const q = new URLSearchParams({ limit: String(limit), ...(this.cursor === null ? {} : { cursor: this.cursor }) });
    const r = await call(this.b.app, 'GET', `/v1/sync?${q}`, this.o);
    if (r.status !== 200) throw new Error(`sync: ${r.status} ${JSON.stringify(r.body)}`);
    for (const c of r.body.changes as Change[]) {
      if (c.op === 'remove') this.held.delete(`${c.kind}:${c.id}`);
      else this.held.set(`${c.kind}:${c.id}`, c.record!);
    }
    this.cursor = r.body.cursor;
    return r.body.has_more as boolean;
  }
}

/** A small seeded generator, so a failure names its seed and replays. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** One writer: creates assets (some in its album) and links, trashes, restores, purges, revokes; answers the live objects it leaves. */
async function writer(b: Backend, m: Maker, o: CallOptions, seed: number, steps: number): Promise<Set<string>> {
  const next = rng(seed);
  const live = new Set<string>();
  const albumId = await m.album(o);
  live.add(`album:${albumId}`);
  const assets = new Map<string, 'live' | 'trashed'>();
  const links = new Set<string>();
  for (let i = 0; i < steps; i++) {
    const pick = next();
    const ids = [...assets.keys()];
    const id = ids[Math.floor(next() * ids.length)];
    if (pick < 0.35 || id === undefined) {
      const u = await m.receivedUpload(o, next() < 0.5 ? { album_id: albumId } : {});
      const f = await call(b.app, 'POST', `/upload/${u.uploadId}/finalize`, {
        ...o,
        body: { content_hash: sha(u.data) },
      });
      expect(f.status, JSON.stringify(f.body)).toBe(200);
      assets.set(u.uploadId, 'live');
    } else if (pick < 0.5) {
      links.add(await m.shareLink(o, [id]));
    } else if (pick < 0.6 && links.size > 0) {
      const l = [...links][0]!;
      expect((await call(b.app, 'DELETE', `/v1/links/${l}`, o)).status).toBe(204);
      links.delete(l);
    } else if (assets.get(id) === 'live') {
      expect((await call(b.app, 'POST', `/v1/assets/${id}/trash`, o)).status).toBe(200);
      assets.set(id, 'trashed');
    } else if (pick < 0.8) {
      expect((await call(b.app, 'POST', `/v1/assets/${id}/restore`, o)).status).toBe(200);
      assets.set(id, 'live');
    } else {
      expect((await call(b.app, 'DELETE', `/v1/assets/${id}`, o)).status).toBe(204);
      assets.delete(id);
    }
  }
  for (const id of assets.keys()) live.add(`asset:${id}`);
  for (const l of links) live.add(`link:${l}`);
  return live;
}

async function run(b: Backend, w: World, seed: number): Promise<void> {
  const m = new Maker(b.app);
  const sOwner = as(w.alice.token, w.s);
  const sBob = as(w.bob.token, w.s);
  const devices = [new Device(b, sOwner), new Device(b, sBob), new Device(b, as(w.alice.token))];
  const next = rng(seed + 99);
  let writing = true;
  const readers = devices.map(async (d) => {
    while (writing) await d.page(1 + Math.floor(next() * 3));
  });
  const [aliceAsS, bobAsS, alice] = await Promise.all([
    writer(b, m, sOwner, seed, 14),
    writer(b, m, sBob, seed + 1, 14),
    writer(b, m, as(w.alice.token), seed + 2, 10),
  ]);
  writing = false;
  await Promise.all(readers);
  for (const d of devices) while (await d.page(2));
  const sLive = [...aliceAsS, ...bobAsS].sort();
  for (const [d, want] of [
    [devices[0]!, sLive],
    [devices[1]!, sLive],
    [devices[2]!, [...alice].sort()],
  ] as const) {
    expect([...d.held.keys()].sort(), `seed ${seed}`).toEqual(want);
    for (const [key, record] of d.held) {
      const [kind, id] = key.split(':') as [string, string];
      if (kind === 'asset') expect(record).toEqual((await call(b.app, 'GET', `/v1/assets/${id}`, d.o)).body);
      if (kind === 'album') expect(record).toEqual((await call(b.app, 'GET', `/v1/albums/${id}`, d.o)).body);
    }
  }
}

const backends: [string, () => Promise<Backend>][] = [
  ['SQLite', () => sqliteBackend()],
  ...(process.env.PG_URL ? ([['PostgreSQL', () => pgBackend()]] as [string, () => Promise<Backend>][]) : []),
];

describe.each(backends)('library sync with concurrent writers over HTTP, %s', (_name, open) => {
  let b: Backend;
  let w: World;
  beforeAll(async () => {
    b = await open();
    w = await makeWorld(b.app);
  }, 60_000);
  afterAll(async () => {
    await b?.close();
  });
  it('every device that reads to the end holds exactly the live objects, as GET answers them', async () => {
    const seed = Number(process.env.TEST_SEED ?? Date.now() % 1_000_000);
    await run(b, w, seed);
  }, 240_000);
});
