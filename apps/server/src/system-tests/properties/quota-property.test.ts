import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts } from '@strongroom/adapters-pg';
import { openTestDatabase } from '@strongroom/adapters-pg/testing';
import {
  FakeClock,
  MemoryBlobStore,
  MemoryLogger,
  SeededRandom,
  TestDevice,
  TestIdentity,
} from '@strongroom/core/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, type AppDeps, type Stores } from '../../deps.js';
import { call, listen, registerUser, testSeed, type CallOptions } from '@strongroom/tests';

/**
 * The quota invariant over HTTP, on SQLite and PostgreSQL: accounts, a sponsored account, an
 * upload link and its guests do uploads of every kind (original, derivative, metadata, provenance,
 * drops, federated fills from several configured peers and a made-up one), merges (the same bytes
 * again, by anyone), cancels, expiries (fake clock), trash, purge, adopt, discard, link revocation
 * and sweeps, in any order and two at a time concurrently. After every step, for every payer:
 * `used` never passed the hard limit through an admission (a provenance or metadata follow-up of
 * the actor's trash, restore or purge within the window: the hard limit plus the overdraft), `used`
 * is the ledger's charges plus the open sessions' reservations, and every stored blob is charged
 * to exactly one account.
 */

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const HARD = 3_000;
/** How far follow-ups of a trash, restore or purge may pass the hard limit, and for how long after it. */
const OVERDRAFT = 300;
const FOLLOW_UP_S = 120;
const TTL_S = 120;
/** Access tokens live 15 minutes: the clock moves at most this far in one run. */
const CLOCK_BUDGET_S = 800;
const PEERS = ['https://p1.example', 'https://p2.example'];
const SEAL = Buffer.from('link-scoped public key').toString('base64url');
const ENV = {
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
  SVC_QUOTA_SOFT_BYTES: '',
  SVC_QUOTA_HARD_BYTES: String(HARD),
  SVC_FEDERATED_BUDGET_PCT: '25',
  SVC_FEDERATION_PEERS: PEERS.join(','),
  SVC_UPLOAD_TTL_S: String(TTL_S),
  SVC_DROP_TTL_S: '100',
  SVC_MAX_OPEN_UPLOADS: '6',
  SVC_QUOTA_FOLLOW_UP_S: String(FOLLOW_UP_S),
  SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES: String(OVERDRAFT),
};
// A handful of contents, so that the same bytes come back (merges) across accounts and kinds.
const CONTENTS = [90, 160, 250, 400, 610].map((n, i) => new Uint8Array(n).fill(i + 1));

interface Session {
  id: string;
  payer: number;
  declared: number;
  content: number;
  kind: string;
  opts: CallOptions;
  /** The asset a non-original blob attaches to. */
  assetId: string | null;
}
interface World {
  app: Hono;
  deps: AppDeps;
  clock: FakeClock;
  blobs: MemoryBlobStore;
  /** Payers 0..2 (registered); actors: the payers, then a sponsored account of payer 0 acting through it. */
  tokens: string[];
  accountIds: string[];
  actors: { opts: CallOptions; payer: number }[];
  linkId: string;
  sessions: Session[];
  assets: { id: string; opts: CallOptions }[];
  drops: string[];
  /** Seconds the fake clock moved in this run. */
  advanced: number;
  /** Two steps are running at once: a step cannot compare before and after. */
  concurrent: boolean;
  /** By account acted as (actorKey): when it last asked for a trash, restore or purge (sent, so possibly applied). */
  trashAt: Map<string, number>;
}

/** The account a caller acts as: its token's, or the sponsored account it names. */
const actorKey = (opts: CallOptions): string => `${opts.token}|${opts.headers?.['x-svc-act-as'] ?? ''}`;

async function world(stores: Omit<Stores, 'blobs' | 'close'>): Promise<World & { close(): Promise<void> }> {
  const clock = new FakeClock();
  const blobs = new MemoryBlobStore();
  const deps = await buildDeps(readConfig(ENV), { ...stores, blobs, close: async () => undefined } as Stores, {
    clock,
    random: new SeededRandom(testSeed()),
    logger: new MemoryLogger(),
    hasher: new Argon2Hasher(),
  });
  const app = createApp(deps);
  const served = await listen(app);
  const tokens: string[] = [];
  const accountIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const u = await registerUser(app);
    const id = (await call(app, 'GET', '/v1/auth/profile', { token: u.access_token })).body.account_id as string;
    const dir = new TestIdentity(id).signDirectory(id, 1, [new TestDevice('phone')]);
    expect(
      (
        await call(app, 'PUT', '/v1/devices/directory', {
          token: u.access_token,
          raw: raw(dir),
          contentType: 'application/cbor',
        })
      ).status,
    ).toBeLessThan(300);
    tokens.push(u.access_token);
    accountIds.push(id);
  }
  const kid = (await call(app, 'POST', '/v1/sponsored', { token: tokens[0] })).body.account_id as string;
  const actors: { opts: CallOptions; payer: number }[] = [0, 1, 2].map((p) => ({
    opts: { token: tokens[p]! },
    payer: p,
  }));
  actors.push({ opts: { token: tokens[0]!, headers: { 'x-svc-act-as': kid } }, payer: 0 });
  const album = await call(app, 'POST', '/v1/albums', { token: tokens[1], body: { device_id: 'phone' } });
  const link = await call(app, 'POST', '/v1/links', {
    token: tokens[1],
    body: { kind: 'upload', album_id: album.body.album_id, seal_key: SEAL, max_bytes: 2_500 },
  });
  return {
    app,
    deps,
    clock,
    blobs,
    tokens,
    accountIds,
    actors,
    linkId: link.body.link_id,
    sessions: [],
    assets: [],
    drops: [],
    advanced: 0,
    concurrent: false,
    trashAt: new Map(),
    close: served.close,
  };
}

const OPEN = new Set(['Pending', 'Uploading', 'WaitingForProcessing']);

/** The invariant, read over HTTP and from the ledger the server keeps. */
async function check(w: World): Promise<void> {
  const reservedBy = [0, 0, 0];
  for (const s of w.sessions) {
    const owner: CallOptions = s.opts.headers?.authorization ? { token: w.tokens[1]! } : s.opts;
    const r = s.opts.headers?.authorization
      ? (await call(w.app, 'GET', `/v1/links/${w.linkId}/drops`, owner)).body.drops.find(
          (d: { upload_id: string }) => d.upload_id === s.id,
        )?.state === 'uploading'
      : OPEN.has((await call(w.app, 'GET', `/upload/${s.id}`, owner)).body.state);
    if (r) reservedBy[s.payer]! += s.declared;
  }
  const charged = new Map<string, number>();
  for (let p = 0; p < 3; p++) {
    const q = (await call(w.app, 'GET', '/quota', { token: w.tokens[p]! })).body;
    const report = await w.deps.quota.report(w.accountIds[p]!);
    const sum = report.blobs.reduce((n, b) => n + b.size, 0);
    expect(q.used, `used of payer ${p}`).toBeLessThanOrEqual(HARD + OVERDRAFT);
    expect(q.reserved, `reserved of payer ${p}`).toBe(reservedBy[p]);
    expect(q.used, `used of payer ${p} = charges + reservations`).toBe(sum + reservedBy[p]!);
    for (const b of report.blobs) {
      expect(charged.has(b.contentHash), `blob ${b.contentHash} charged twice`).toBe(false);
      charged.set(b.contentHash, p);
    }
  }
  // Every stored blob is charged to exactly one account, and every charge is a stored blob.
  expect([...w.blobs.blobs.keys()].sort()).toEqual([...charged.keys()].sort());
}

/** One step: its body, and the invariant checked after it. */
interface Cmd extends fc.AsyncCommand<World, World> {
  readonly body: (w: World) => Promise<unknown>;
}
const run = (body: (w: World) => Promise<unknown>, name: string): Cmd => ({
  body,
  check: () => true,
  run: async (_m, w) => {
    await body(w);
    await check(w);
  },
  toString: () => name,
});

async function sendAndFinalize(w: World, s: Session): Promise<void> {
  const data = CONTENTS[s.content]!;
  const put = await call(w.app, 'PUT', `/upload/${s.id}`, {
    ...s.opts,
    raw: raw(data),
    contentType: 'application/octet-stream',
  });
  if (put.status !== 200) return;
  const manifest = s.assetId === null ? {} : { manifest: { asset_id: s.assetId } };
  const f = await call(w.app, 'POST', `/upload/${s.id}/finalize`, {
    ...s.opts,
    body: { content_hash: sha(data), ...manifest },
  });
  if (f.status === 200 && s.kind === 'original' && !s.opts.headers?.authorization)
    w.assets.push({ id: s.id, opts: s.opts });
}

function open(actor: number, kind: string, content: number, slack: number, finish: boolean, peer: number): Cmd {
  return run(
    async (w) => {
      const a = w.actors[actor % w.actors.length]!;
      const data = CONTENTS[content]!;
      const declared = data.length + slack;
      let assetId: string | null = null;
      const body: Record<string, unknown> = { device_id: 'phone', kind, declared_size: declared };
      if (kind === 'federated')
        Object.assign(body, { source_peer: PEERS[peer] ?? 'https://made-up.example', content_hash: sha(data) });
      else if (kind !== 'original') {
        const mine = w.assets.filter((x) => x.opts === a.opts);
        if (mine.length === 0) return;
        assetId = mine[content % mine.length]!.id;
      } else if (slack % 2 === 0) body.content_hash = sha(data);
      const before = (await call(w.app, 'GET', '/quota', { token: w.tokens[a.payer]! })).body;
      const r = await call(w.app, 'POST', '/upload', { ...a.opts, body });
      if (r.status === 201) {
        // Admitted only within the hard limit (a follow-up: plus the overdraft), never Merged at
        // creation, and reserved at once (every kind).
        const since = w.trashAt.get(actorKey(a.opts));
        const followUp =
          (kind === 'provenance' || kind === 'metadata') &&
          since !== undefined &&
          w.clock.now() - since <= FOLLOW_UP_S * 1000;
        expect(before.used + declared, `${kind}${followUp ? ', a follow-up' : ''}`).toBeLessThanOrEqual(
          followUp ? HARD + OVERDRAFT : HARD,
        );
        expect(r.body.state).toBe('Pending');
        if (!w.concurrent)
          expect(
            (await call(w.app, 'GET', '/quota', { token: w.tokens[a.payer]! })).body.used,
            `${kind} reserved at creation`,
          ).toBe(before.used + declared);
        const s = { id: r.body.upload_id, payer: a.payer, declared, content, kind, opts: a.opts, assetId };
        w.sessions.push(s);
        if (finish) await sendAndFinalize(w, s);
      } else {
        expect([403, 404, 429]).toContain(r.status);
        if (kind === 'federated' && peer >= PEERS.length) expect(r.body.code).toBe('error.federation.unknown_peer');
      }
    },
    `open(${actor}, ${kind}, #${content}, +${slack}, ${finish ? 'finish' : 'open'}, peer ${peer})`,
  );
}

function guestDrop(content: number, finish: boolean): Cmd {
  return run(
    async (w) => {
      const data = CONTENTS[content]!;
      const r = await call(w.app, 'POST', `/v1/links/${w.linkId}/drops`, { body: { declared_size: data.length } });
      if (r.status !== 201) return expect([403, 404, 429]).toContain(r.status);
      const opts: CallOptions = { headers: { authorization: `Upload ${r.body.upload_token}` } };
      const s = {
        id: r.body.upload_id,
        payer: 1,
        declared: data.length,
        content,
        kind: 'original',
        opts,
        assetId: null,
      };
      w.sessions.push(s);
      w.drops.push(s.id);
      if (finish) await sendAndFinalize(w, s);
    },
    `drop(#${content}, ${finish ? 'finish' : 'open'})`,
  );
}

const finishOne = (pick: number): Cmd =>
  run(async (w) => {
    if (w.sessions.length > 0) await sendAndFinalize(w, w.sessions[pick % w.sessions.length]!);
  }, `finish(${pick})`);
const cancelOne = (pick: number): Cmd =>
  run(async (w) => {
    const s = w.sessions[pick % Math.max(1, w.sessions.length)];
    if (s && !s.opts.headers?.authorization) await call(w.app, 'DELETE', `/upload/${s.id}`, s.opts);
  }, `cancel(${pick})`);
const assetOp = (op: 'trash' | 'restore' | 'purge', pick: number): Cmd =>
  run(async (w) => {
    const a = w.assets[pick % Math.max(1, w.assets.length)];
    if (!a) return;
    // Before the request: an opening running beside it may already see the change.
    w.trashAt.set(actorKey(a.opts), w.clock.now());
    if (op === 'purge') await call(w.app, 'DELETE', `/v1/assets/${a.id}`, a.opts);
    else await call(w.app, 'POST', `/v1/assets/${a.id}/${op}`, a.opts);
  }, `${op}(${pick})`);
const dropOp = (op: 'adopt' | 'discard', pick: number): Cmd =>
  run(async (w) => {
    const id = w.drops[pick % Math.max(1, w.drops.length)];
    if (!id) return;
    const owner = { token: w.tokens[1]! };
    if (op === 'adopt') {
      if ((await call(w.app, 'POST', `/v1/drops/${id}/adopt`, owner)).status === 200)
        w.assets.push({ id, opts: owner });
    } else await call(w.app, 'DELETE', `/v1/drops/${id}`, owner);
  }, `${op}(${pick})`);
const sweep = (): Cmd => run((w) => w.deps.quota.sweep(), 'sweep');
const advance = (s: number): Cmd =>
  run(async (w) => {
    if (w.advanced + s > CLOCK_BUDGET_S) return;
    w.advanced += s;
    w.clock.advance(s * 1000);
  }, `advance(${s}s)`);
const revoke = (): Cmd =>
  run((w) => call(w.app, 'DELETE', `/v1/links/${w.linkId}`, { token: w.tokens[1]! }), 'revokeLink');

/** Two steps at once (Promise.all), then the invariant. */
const together = (a: Cmd, b: Cmd): Cmd =>
  run(async (w) => {
    w.concurrent = true;
    try {
      await Promise.all([a.body(w), b.body(w)]);
    } finally {
      w.concurrent = false;
    }
  }, `together(${a.toString()}, ${b.toString()})`);

function commands(): fc.Arbitrary<Cmd>[] {
  const kind = fc.constantFrom('original', 'original', 'derivative', 'metadata', 'provenance', 'federated');
  const single = [
    fc
      .tuple(
        fc.nat(3),
        kind,
        fc.nat(CONTENTS.length - 1),
        fc.integer({ min: 0, max: 40 }),
        fc.boolean(),
        fc.nat(PEERS.length),
      )
      .map(([a, k, c, s, f, p]) => open(a, k, c, s, f, p)),
    fc.tuple(fc.nat(CONTENTS.length - 1), fc.boolean()).map(([c, f]) => guestDrop(c, f)),
    fc.nat(20).map(finishOne),
    fc.nat(20).map(cancelOne),
    fc
      .tuple(fc.constantFrom<'trash' | 'restore' | 'purge'>('trash', 'restore', 'purge'), fc.nat(20))
      .map(([op, p]) => assetOp(op, p)),
    fc.tuple(fc.constantFrom<'adopt' | 'discard'>('adopt', 'discard'), fc.nat(20)).map(([op, p]) => dropOp(op, p)),
    fc.constant(sweep()),
    fc.constantFrom(20, 90, 150).map(advance),
    fc.constant(revoke()),
  ];
  // Openings weigh most: they are what the invariant is about.
  return [
    single[0]!,
    single[0]!,
    single[0]!,
    single[0]!,
    single[1]!,
    ...single,
    fc.tuple(fc.oneof(...single.slice(0, 4)), fc.oneof(...single.slice(0, 7))).map(([a, b]) => together(a, b)),
  ];
}

const backends = [
  [
    'SQLite',
    async () => {
      const db = openSqliteDatabase(':memory:');
      return { stores: createSqlitePorts(db), close: async () => void db.close() };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const t = await openTestDatabase();
      return { stores: createPgPorts(t.db), close: () => t.close() };
    },
  ],
] as const;

for (const [name, make] of backends) {
  describe(`the quota invariant over HTTP: ${name}`, () => {
    it('holds after every step of any sequence of uploads of every kind, merges, cancels, expiries, trash, purge, adopt, discard, revocation and sweeps', async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands(), { maxCommands: 30, size: 'max' }), async (cmds) => {
          const b = await make();
          const w = await world(b.stores);
          try {
            await check(w);
            await fc.asyncModelRun(() => ({ model: w, real: w }), cmds);
          } finally {
            await w.close();
            await b.close();
          }
        }),
        // Ten sequences per run, each run new ones (a failure prints its seed): bounded so that the
        // file stays well inside the suite's budget on a shared 2-core machine.
        { numRuns: 10, interruptAfterTimeLimit: 40_000 },
      );
    }, 120_000);
  });
}
