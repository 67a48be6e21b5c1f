import { createHash } from 'node:crypto';
import { uuidv7 } from '@strongroom/core';
import type { MemoryDirectBlobStore } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../app.js';
import type { AnyRoute } from '../../http/route-def.js';
import { call, PASSWORD, type CallOptions, type Reply } from '@strongroom/tests';
import {
  as,
  fresh,
  guestOf,
  Maker,
  makeWorld,
  OIDC_RETURN,
  phone,
  pgBackend,
  PIN,
  raw,
  sha,
  sqliteBackend,
  type Backend,
  type World,
} from '@strongroom/tests/access';

/**
 * The authorization matrix over HTTP (spec §8.1), generated from the route table.
 *
 * For every route in `allRoutes` whose path names an object (a `:param`), and every principal
 * (the owner; other accounts; a co-owner acting as a sponsored account; the sponsor without
 * act-as; a sibling sponsored account; a guest upload token; no token), only the principals the rule
 * allows (packages/core/src/access/rules.ts, `mayReach`: the request acts as the account the object
 * belongs to) get a 2xx; every other one gets the route's refusal (404, or 401 without a usable
 * token, or 403 where the route answers so) and the database is unchanged (every table compared
 * before and after). Objects are made for two owners: Alice's own, and S's (Alice sponsors S and S2
 * and added Bob as an owner of S), so that "acting as S reaches none of Alice's" and "Alice without
 * act-as reaches none of S's" are both cells of the matrix. The expected answer is computed here
 * from the world (who acts as which account), not by calling the rule under test.
 *
 * ADDING A ROUTE. A route with a path parameter that has no entry in RECIPES fails this test (see
 * "every route with an object id has a recipe"), and so does a recipe that names no route. Add one
 * entry, keyed exactly `METHOD /path/:param` as in the route definition:
 *
 *   'GET /v1/blobs/:content_hash': { make: async (m, owner) => ({ params: { content_hash: await m.blobOf(owner) } }) },
 *
 * `make` builds a fresh object of the account `owner` acts as (through the API, with the Maker in
 * @strongroom/tests/access; add a helper there when a new kind of object needs one) and returns the path
 * parameters and whatever else the request needs (a body, a query, a protocol version). By default
 * the route is judged by the rule; say `access: 'public'` for a route anyone may call (a bearer
 * capability such as a link id; give `status` when everyone gets the same non-2xx answer), or
 * `access: 'sponsorship'` for a route decided by sponsored-account ownership. `owners` narrows the
 * owners to build objects for (a session belongs only to a registered account). A route that serves
 * two kinds of object under one path (an upload session or a federated fill) names each maker.
 *
 * Runs on SQLite; `AUTHZ_MATRIX_PG=1 PG_URL=postgres://…` runs it on PostgreSQL as well (about a
 * minute more). isolation.test.ts runs the finding itself on both stores every time.
 */

type OwnerKey = 'alice' | 's';
type PrincipalKey = 'alice' | 'alice as S' | 'alice as S2' | 'bob' | 'bob as S' | 'carol' | 'guest' | 'no token';

interface Fixture {
  readonly params: Readonly<Record<string, string>>;
  /** Body, content type, protocol version: merged under the principal's credentials. */
  readonly request?: CallOptions;
  readonly query?: string;
}
type Make = (m: Maker, owner: CallOptions, w: World, b: Backend) => Promise<Fixture>;

interface Recipe {
  readonly access?: 'owned' | 'public' | 'sponsorship';
  readonly owners?: readonly OwnerKey[];
  /** For `public` routes whose answer is the same non-2xx for everyone. */
  readonly status?: number;
  readonly make: Make | Readonly<Record<string, Make>>;
  /**
   * The route takes one of core's RECENT_AUTH_ACTIONS (it lets another principal in for good): with
   * the owner's stale session (recent authentication lapsed), every principal that would succeed
   * gets 403 error.auth.reauthentication_required instead, and nothing changes.
   */
  readonly recentAuth?: true;
}

const octets = (data: Uint8Array): CallOptions => ({ raw: raw(data), contentType: 'application/octet-stream' });
const pinned: CallOptions = { version: PIN };

/** An upgrade intent for `albumId`, signed by the `phone` device every account in the world lists. */
function intent(albumId: string, clock: { now(): number }): { id: string; body: Uint8Array } {
  const id = uuidv7(clock.now(), fresh(10));
  return {
    id,
    body: phone.signUpgradeIntent({ album_id: albumId, from_version: PIN, to_version: '2026-09-01', intent_id: id }),
  };
}

async function expectOk(r: Promise<Reply>, what: string): Promise<Reply> {
  const reply = await r;
  if (reply.status >= 300) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply;
}

const upload: Make = async (m, owner) => ({ params: { id: (await m.openUpload(owner)).uploadId } });
const fill: Make = async (m, owner) => ({ params: { id: (await m.fill(owner)).uploadId } });
/**
 * A session that goes in parts: above the direct store's threshold (64 MiB by default). Its
 * reservation is most of a hard limit here, so the one made before it is cancelled first.
 */
const openInParts: { id: string; owner: CallOptions }[] = [];
const inParts: Make = async (m, owner) => {
  for (const earlier of openInParts.splice(0)) await call(m.app, 'DELETE', `/upload/${earlier.id}`, earlier.owner);
  const { uploadId } = await m.openUpload(owner, { declared_size: 64 * 1024 * 1024 + 1 });
  openInParts.push({ id: uploadId, owner });
  return { params: { id: uploadId } };
};
const TUS = { 'tus-resumable': '1.0.0' };
/** A recipe's request with the tus header every tus request carries. */
const withTus =
  (make: Make): Make =>
  async (...a) => ({ ...(await make(...a)), request: { headers: TUS } });
/** The whole upload in one tus PATCH from offset 0. */
const tusChunk = (data: Uint8Array): CallOptions => ({
  raw: raw(data),
  contentType: 'application/offset+octet-stream',
  headers: { ...TUS, 'upload-offset': '0' },
});

/** One entry per route with a path parameter. */
const RECIPES: Record<string, Recipe> = {
  'POST /v1/albums/:album_id/upgrade': {
    make: async (m, owner, _w, b) => {
      const albumId = await m.album(owner);
      return {
        params: { album_id: albumId },
        request: { ...pinned, raw: raw(intent(albumId, b.clock).body), contentType: 'application/cbor' },
      };
    },
  },
  'GET /v1/albums/:album_id/upgrade': {
    make: async (m, owner) => ({ params: { album_id: await m.album(owner) }, request: pinned }),
  },
  'GET /v1/albums/:album_id': { make: async (m, owner) => ({ params: { album_id: await m.album(owner) } }) },
  'DELETE /v1/albums/:album_id/upgrade': {
    make: async (m, owner, _w, b) => {
      const albumId = await m.album(owner);
      const i = intent(albumId, b.clock);
      await expectOk(
        call(m.app, 'POST', `/v1/albums/${albumId}/upgrade`, {
          ...owner,
          ...pinned,
          raw: raw(i.body),
          contentType: 'application/cbor',
        }),
        'propose',
      );
      return { params: { album_id: albumId }, query: `intent_id=${i.id}`, request: pinned };
    },
  },
  'GET /v1/assets/:id': { make: async (m, owner) => ({ params: { id: await m.asset(owner) } }) },
  'POST /v1/assets/:id/trash': { make: async (m, owner) => ({ params: { id: await m.asset(owner) } }) },
  'POST /v1/assets/:id/restore': { make: async (m, owner) => ({ params: { id: await m.trashedAsset(owner) } }) },
  'DELETE /v1/assets/:id': { make: async (m, owner) => ({ params: { id: await m.trashedAsset(owner) } }) },
  'PUT /v1/assets/:id/metadata': {
    make: async (m, owner) => ({ params: { id: await m.asset(owner) }, request: octets(fresh(32)) }),
  },
  'DELETE /v1/auth/sessions/:session_id': {
    // Sessions belong to registered accounts only: another sign-in of Alice's.
    owners: ['alice'],
    make: async (m, _owner, w) => {
      const r = await expectOk(
        call(m.app, 'POST', '/v1/auth/login', { body: { address: w.alice.address, password: PASSWORD } }),
        'login',
      );
      return { params: { session_id: r.body.session_id } };
    },
  },
  'POST /v1/sponsored/:id/owners': {
    access: 'sponsorship',
    recentAuth: true,
    owners: ['alice'],
    make: async (m, owner, w) => ({
      params: { id: await sponsoredWithBob(m, w, owner) },
      request: { body: { account_id: w.carol.accountId } },
    }),
  },
  'DELETE /v1/sponsored/:id/owners/:owner_id': {
    access: 'sponsorship',
    owners: ['alice'],
    make: async (m, owner, w) => ({ params: { id: await sponsoredWithBob(m, w, owner), owner_id: w.bob.accountId } }),
  },
  // A link id is a bearer capability: reading an active link and opening a drop need no account.
  'GET /v1/links/:link_id': {
    access: 'public',
    make: async (m, owner) => ({ params: { link_id: await m.shareLink(owner) } }),
  },
  'GET /v1/links/:link_id/assets': {
    access: 'public',
    make: async (m, owner) => ({ params: { link_id: await m.shareLink(owner) } }),
  },
  'POST /v1/links/:link_id/drops': {
    access: 'public',
    make: async (m, owner) => ({
      params: { link_id: await m.uploadLink(owner) },
      request: { body: { declared_size: 10 } },
    }),
  },
  'DELETE /v1/links/:link_id': { make: async (m, owner) => ({ params: { link_id: await m.shareLink(owner) } }) },
  'GET /v1/links/:link_id/drops': { make: async (m, owner) => ({ params: { link_id: await m.uploadLink(owner) } }) },
  'POST /v1/drops/:id/adopt': { make: async (m, owner) => ({ params: { id: (await m.drop(owner, true)).uploadId } }) },
  'DELETE /v1/drops/:id': { make: async (m, owner) => ({ params: { id: (await m.drop(owner, true)).uploadId } }) },
  'GET /upload/:id': { make: { 'upload session': upload, 'federated fill': fill } },
  'DELETE /upload/:id': { make: { 'upload session': upload, 'federated fill': fill } },
  'PUT /upload/:id': {
    make: {
      'upload session': async (m, owner) => {
        const u = await m.openUpload(owner);
        return { params: { id: u.uploadId }, request: octets(u.data) };
      },
      'federated fill': async (m, owner) => {
        const f = await m.fill(owner);
        return { params: { id: f.uploadId }, request: octets(f.data) };
      },
    },
  },
  // A fresh direct upload URL: whoever may send the session's bytes, and no one else.
  // Resumable (tus) uploads: the same sessions, the same rule, through the offset routes.
  'GET /upload-tus/:id': { make: { 'upload session': withTus(upload), 'federated fill': withTus(fill) } },
  'DELETE /upload-tus/:id': { make: { 'upload session': withTus(upload), 'federated fill': withTus(fill) } },
  'PATCH /upload-tus/:id': {
    make: {
      'upload session': async (m, owner) => {
        const u = await m.openUpload(owner);
        return { params: { id: u.uploadId }, request: tusChunk(u.data) };
      },
      'federated fill': async (m, owner) => {
        const f = await m.fill(owner);
        return { params: { id: f.uploadId }, request: tusChunk(f.data) };
      },
    },
  },
  'POST /upload/:id/direct-put': { make: { 'upload session': upload, 'federated fill': fill } },
  // Parts of a direct upload in parts: whoever may send the session's bytes, and no one else.
  'GET /upload/:id/parts': { make: { 'upload in parts': inParts } },
  'POST /upload/:id/parts': {
    make: {
      'upload in parts': async (m, owner, w, b) => ({
        ...(await inParts(m, owner, w, b)),
        request: { body: { parts: [{ part_number: 1, sha256: 'a'.repeat(64) }] } },
      }),
    },
  },
  'POST /upload/:id/finalize': {
    make: {
      'upload session': async (m, owner) => {
        const u = await m.receivedUpload(owner);
        return { params: { id: u.uploadId }, request: { body: { content_hash: sha(u.data) } } };
      },
      // Bytes sent straight to the store with the session's direct_put: finalize checks them there.
      'direct upload': async (m, owner, _w, b) => {
        const u = await m.openUpload(owner);
        const store = b.deps.stores.blobs as MemoryDirectBlobStore;
        if (!store.send(u.uploadId, u.data)) throw new Error('the store refused the direct upload');
        return { params: { id: u.uploadId }, request: { body: { content_hash: sha(u.data) } } };
      },
      'federated fill': async (m, owner) => {
        const f = await m.fill(owner, true);
        return { params: { id: f.uploadId }, request: { body: { content_hash: sha(f.data) } } };
      },
    },
  },
  // Reading blobs back: the account's own assets' blobs; through a share link, for anyone holding it.
  'GET /v1/blobs/:content_hash': {
    make: async (m, owner) => ({ params: { content_hash: (await m.blob(owner)).contentHash } }),
  },
  'GET /v1/links/:link_id/blobs/:content_hash': {
    access: 'public',
    make: async (m, owner) => {
      const b = await m.blob(owner);
      return { params: { link_id: await m.shareLink(owner, [b.assetId]), content_hash: b.contentHash } };
    },
  },
  'GET /.well-known/svc/moved/:user': {
    access: 'public',
    status: 404,
    make: async () => ({ params: { user: 'alice' } }),
  },
};

/** A fresh sponsored account of Alice's with Bob as a second owner; `alice` holds a session of hers that authenticated recently. */
async function sponsoredWithBob(m: Maker, w: World, alice: CallOptions): Promise<string> {
  const id = (await expectOk(call(m.app, 'POST', '/v1/sponsored', { token: alice.token }), 'sponsor')).body
    .account_id as string;
  await expectOk(
    call(m.app, 'POST', `/v1/sponsored/${id}/owners`, { token: alice.token, body: { account_id: w.bob.accountId } }),
    'add owner',
  );
  return id;
}

const key = (r: Pick<AnyRoute, 'method' | 'path'>): string => `${r.method} ${r.path}`;
const takesId = (r: AnyRoute): boolean => r.path.includes('/:');

// The route table, read once at collection time from an app like any other (its deps are only captured).
const table: AnyRoute[] = await (async () => {
  const b = await sqliteBackend();
  try {
    return allRoutes(b.deps);
  } finally {
    await b.close();
  }
})();

describe('the authorization matrix covers the route table', () => {
  it('every route with an object id has a recipe', () => {
    expect(
      table
        .filter(takesId)
        .map(key)
        .filter((k) => !(k in RECIPES)),
    ).toEqual([]);
  });
  it('every recipe names a route with an object id', () => {
    const ids = new Set(table.filter(takesId).map(key));
    expect(Object.keys(RECIPES).filter((k) => !ids.has(k))).toEqual([]);
  });
});

// PostgreSQL too with AUTHZ_MATRIX_PG=1 (and PG_URL): about a minute on a shared machine, so not by default.
const pgWanted = process.env.AUTHZ_MATRIX_PG === '1';
// Every cell twice: with sessions fresh from sign-in, and with every session's recent
// authentication lapsed (the owner's stale session, as a stolen access token would be). Reaching an
// object never needs recent authentication, and a lapsed session reaches nothing more than a fresh
// one: the answers are the same, except on a route that lets another principal in (`recentAuth`),
// which refuses the stale session everything it would have granted.
const REAUTH_WINDOW_MS = 300_000;
for (const open of pgWanted ? [sqliteBackend, pgBackend] : [sqliteBackend])
  for (const recency of ['recent sign-in', 'recent authentication lapsed'] as const) {
    describe(`authorization matrix over HTTP (${open === sqliteBackend ? 'SQLite' : 'PostgreSQL'}, ${recency})`, {
      timeout: 120_000,
    }, () => {
      let b: Backend;
      let w: World;
      let m: Maker;
      /** Per owner, the upload token of a drop on one of its links: a guest with the same account. */
      const guests = new Map<OwnerKey, string>();
      /**
       * The sessions fixtures are made with. With recent authentication lapsed, Alice and Bob also sign
       * in afresh to make objects (an upload link, a co-owner) that a stale session may not make; the
       * principals under test keep their stale sessions.
       */
      const makers = new Map<'alice' | 'bob', string>();
      beforeAll(async () => {
        b = await open();
        w = await makeWorld(b.app);
        m = new Maker(b.app);
        guests.set('alice', (await m.drop(as(w.alice.token))).uploadToken);
        guests.set('s', (await m.drop(as(w.bob.token, w.s))).uploadToken);
        if (recency === 'recent authentication lapsed') {
          b.clock.advance(REAUTH_WINDOW_MS + 1_000);
          // The lapse is real: changing how the account signs in is now refused for Alice.
          const enroll = await call(b.app, 'POST', '/v1/auth/totp/enroll', as(w.alice.token));
          expect(enroll.status, JSON.stringify(enroll.body)).toBe(403);
          expect(enroll.body.code).toBe('error.auth.reauthentication_required');
          // Each session's last-used time is written once per minute of use: write it now, so the
          // database comparisons below see only what a refused request itself might change.
          for (const token of [w.alice.token, w.bob.token, w.carol.token])
            await call(b.app, 'GET', '/quota', as(token));
          for (const who of ['alice', 'bob'] as const) {
            const signedIn = await expectOk(
              call(b.app, 'POST', '/v1/auth/login', { body: { address: w[who].address, password: PASSWORD } }),
              `sign-in of ${who}`,
            );
            makers.set(who, signedIn.body.access_token as string);
          }
        }
      }, 120_000);
      afterAll(async () => {
        await b?.close();
      });

      const ownerOptions = (o: OwnerKey): CallOptions =>
        o === 'alice' ? as(makers.get('alice') ?? w.alice.token) : as(makers.get('bob') ?? w.bob.token, w.s);
      const ownerAccount = (o: OwnerKey): string => (o === 'alice' ? w.alice.accountId : w.s);
      /** The principal's credentials, and the account it acts as (null: a guest or nobody). */
      function principal(
        p: PrincipalKey,
        o: OwnerKey,
      ): { options: CallOptions; actsAs: string | null; registered: string | null } {
        switch (p) {
          case 'alice':
            return { options: as(w.alice.token), actsAs: w.alice.accountId, registered: w.alice.accountId };
          case 'alice as S':
            return { options: as(w.alice.token, w.s), actsAs: w.s, registered: null };
          case 'alice as S2':
            return { options: as(w.alice.token, w.s2), actsAs: w.s2, registered: null };
          case 'bob':
            return { options: as(w.bob.token), actsAs: w.bob.accountId, registered: w.bob.accountId };
          case 'bob as S':
            return { options: as(w.bob.token, w.s), actsAs: w.s, registered: null };
          case 'carol':
            return { options: as(w.carol.token), actsAs: w.carol.accountId, registered: w.carol.accountId };
          case 'guest':
            return { options: guestOf(guests.get(o)!), actsAs: null, registered: null };
          case 'no token':
            return { options: {}, actsAs: null, registered: null };
        }
      }
      const PRINCIPALS: PrincipalKey[] = [
        'alice',
        'alice as S',
        'alice as S2',
        'bob',
        'bob as S',
        'carol',
        'guest',
        'no token',
      ];

      /** What the principal should get: 'ok' (any 2xx) or the refusal's status. */
      function expected(recipe: Recipe, p: PrincipalKey, o: OwnerKey): 'ok' | number {
        const fresh = expectedFresh(recipe, p, o);
        return fresh === 'ok' && recipe.recentAuth && recency === 'recent authentication lapsed' ? 403 : fresh;
      }
      function expectedFresh(recipe: Recipe, p: PrincipalKey, o: OwnerKey): 'ok' | number {
        const who = principal(p, o);
        switch (recipe.access ?? 'owned') {
          case 'public':
            return recipe.status ?? 'ok';
          case 'sponsorship':
            // Alice sponsors the account and Bob owns it: each, as itself, manages its owners.
            if (who.actsAs === null) return 401;
            return who.registered === w.alice.accountId || who.registered === w.bob.accountId ? 'ok' : 403;
          case 'owned':
            if (who.actsAs === null) return 401;
            return who.actsAs === ownerAccount(o) ? 'ok' : 404;
        }
      }

      function send(r: AnyRoute, f: Fixture, creds: CallOptions): Promise<Reply> {
        const path = r.path.replace(/:([A-Za-z_]+)/g, (_all, name: string) => {
          const value = f.params[name];
          if (value === undefined) throw new Error(`the recipe for ${key(r)} gave no ${name}`);
          return encodeURIComponent(value);
        });
        const headers = { ...f.request?.headers, ...creds.headers };
        return call(b.app, r.method, f.query === undefined ? path : `${path}?${f.query}`, {
          ...f.request,
          ...creds,
          headers,
        });
      }

      for (const r of table.filter((r) => takesId(r) && key(r) in RECIPES)) {
        const recipe = RECIPES[key(r)]!;
        const makers = typeof recipe.make === 'function' ? { object: recipe.make } : recipe.make;
        it(key(r), async () => {
          for (const [kind, make] of Object.entries(makers)) {
            for (const o of recipe.owners ?? (['alice', 's'] as const)) {
              const cells = PRINCIPALS.map((p) => ({ p, want: expected(recipe, p, o) }));
              // One object for every refusal (a refusal changes nothing, which is checked), then a
              // fresh object for each principal that may act on it (its 2xx may have changed it).
              // The database is compared once around all the refusals (a dump per request made the
              // PostgreSQL run too slow to keep); a failure names every principal that was refused.
              let f = await make(m, ownerOptions(o), w, b);
              const refused = cells.filter((c) => c.want !== 'ok');
              const before = await b.dump();
              for (const { p, want } of refused) {
                const label = `${key(r)} on ${o === 'alice' ? "Alice's" : "S's"} ${kind}, as ${p}`;
                const got = await send(r, f, principal(p, o).options);
                expect(got.status, `${label}: ${JSON.stringify(got.body)}`).toBe(want);
              }
              expect(
                await b.dump(),
                `${key(r)} on ${o === 'alice' ? "Alice's" : "S's"} ${kind}: refusing ${refused.map((c) => c.p).join(', ')} changed the database`,
              ).toEqual(before);
              let first = true;
              for (const { p } of cells.filter((c) => c.want === 'ok')) {
                const label = `${key(r)} on ${o === 'alice' ? "Alice's" : "S's"} ${kind}, as ${p}`;
                if (!first && recipe.access !== 'public') f = await make(m, ownerOptions(o), w, b);
                first = false;
                const got = await send(r, f, principal(p, o).options);
                expect(
                  got.status >= 200 && got.status < 300,
                  `${label}: ${got.status} ${JSON.stringify(got.body)}`,
                ).toBe(true);
              }
            }
          }
        });
      }
    });
  }

/**
 * The OpenID routes take the caller's token when a flow acts on an account (`link`,
 * `reauthenticate`) and name no object: their matrix is who may act as whom. A link or a
 * reauthentication acts on the caller's own account only; acting as a sponsored account it is
 * refused (a sponsored account has no identity of its own: 403 error.sponsored.no_identity), and
 * naming an account the caller does not own is 403 error.auth.not_an_owner, as on every route.
 */
describe('authorization matrix over HTTP: OpenID start and complete (X-Svc-Act-As)', { timeout: 120_000 }, () => {
  let b: Backend;
  let w: World;
  const CHALLENGE = 'matrix-app-verifier'.padEnd(43, 'v');
  const APP_CHALLENGE = createHash('sha256').update(CHALLENGE).digest('base64url');
  beforeAll(async () => {
    b = await sqliteBackend({ oidc: true });
    w = await makeWorld(b.app);
  }, 120_000);
  afterAll(async () => {
    await b?.close();
  });

  type Cell = { who: string; options: () => CallOptions; want: number; code?: string };
  const cells = (): Cell[] => [
    { who: 'alice', options: () => as(w.alice.token), want: 200 },
    { who: 'alice as S', options: () => as(w.alice.token, w.s), want: 403, code: 'error.sponsored.no_identity' },
    { who: 'alice as S2', options: () => as(w.alice.token, w.s2), want: 403, code: 'error.sponsored.no_identity' },
    { who: 'bob as S', options: () => as(w.bob.token, w.s), want: 403, code: 'error.sponsored.no_identity' },
    { who: 'carol as S', options: () => as(w.carol.token, w.s), want: 403, code: 'error.auth.not_an_owner' },
    { who: 'carol as S2', options: () => as(w.carol.token, w.s2), want: 403, code: 'error.auth.not_an_owner' },
    { who: 'no token', options: () => ({}), want: 401, code: 'error.auth.session_invalid' },
  ];
  const start = (purpose: string, creds: CallOptions) =>
    call(b.app, 'POST', '/v1/auth/oidc/start', {
      ...creds,
      body: { return_to: OIDC_RETURN, purpose, app_challenge: APP_CHALLENGE },
    });
  /** A login code for a flow Alice started as herself, after the person signed in at the provider. */
  async function aliceCode(purpose: 'link' | 'reauthenticate', subject: string): Promise<string> {
    const started = await expectOk(start(purpose, as(w.alice.token)), `start ${purpose}`);
    const state = new URL(started.body.authorization_url).searchParams.get('state')!;
    const params = new URLSearchParams(b.idp!.signIn(state, { subject }));
    const back = await call(b.app, 'GET', `/v1/auth/oidc/callback?${params}`, { version: null });
    const code = new URL(back.headers.get('location')!).searchParams.get('login_code');
    if (code === null) throw new Error(`no login code: ${back.headers.get('location')}`);
    return code;
  }
  const complete = (loginCode: string, creds: CallOptions) =>
    call(b.app, 'POST', '/v1/auth/oidc/complete', {
      ...creds,
      body: { login_code: loginCode, app_verifier: CHALLENGE },
    });
  const aliceLinks = async () =>
    (await call(b.app, 'GET', '/v1/auth/methods', as(w.alice.token))).body.oidc as unknown[];

  for (const purpose of ['link', 'reauthenticate'] as const) {
    it(`POST /v1/auth/oidc/start (${purpose})`, async () => {
      const before = await b.dump();
      for (const c of cells().filter((c) => c.want !== 200)) {
        const got = await start(purpose, c.options());
        expect([got.status, got.body?.code], `${purpose} as ${c.who}: ${JSON.stringify(got.body)}`).toEqual([
          c.want,
          c.code,
        ]);
      }
      expect(await b.dump(), `refusing a ${purpose} start changed the database`).toEqual(before);
      expect((await start(purpose, as(w.alice.token))).status).toBe(200);
    });
  }

  it('POST /v1/auth/oidc/complete (link): every refusal links nothing', async () => {
    for (const c of cells().filter((c) => c.want !== 200)) {
      const code = await aliceCode('link', `refused-${c.who}`);
      const got = await complete(code, c.options());
      expect([got.status, got.body?.code], `link as ${c.who}: ${JSON.stringify(got.body)}`).toEqual([c.want, c.code]);
    }
    expect(await aliceLinks()).toEqual([]);
    expect((await call(b.app, 'GET', '/v1/auth/methods', as(w.alice.token, w.s))).body.oidc).toEqual([]);
    expect((await complete(await aliceCode('link', 'alice-at-idp'), as(w.alice.token))).status).toBe(204);
    expect(await aliceLinks()).toHaveLength(1);
  });

  it('POST /v1/auth/oidc/complete (reauthenticate)', async () => {
    if ((await aliceLinks()).length === 0)
      await expectOk(complete(await aliceCode('link', 'alice-at-idp'), as(w.alice.token)), 'link');
    for (const c of cells().filter((c) => c.want !== 200)) {
      const got = await complete(await aliceCode('reauthenticate', 'alice-at-idp'), c.options());
      expect([got.status, got.body?.code], `reauthenticate as ${c.who}: ${JSON.stringify(got.body)}`).toEqual([
        c.want,
        c.code,
      ]);
    }
    const done = await complete(await aliceCode('reauthenticate', 'alice-at-idp'), as(w.alice.token));
    expect(done.status, JSON.stringify(done.body)).toBe(200);
  });
});

/**
 * The local credential routes act on the caller's own sign-in: a password, a reauthentication, a
 * second factor. A sponsored account has none of its own (no way to sign in), so acting as one is
 * 403 error.sponsored.no_identity before anything is read or changed, as for its handle and
 * profile; naming an account the caller does not own is 403 error.auth.not_an_owner.
 */
describe('authorization matrix over HTTP: local credential routes (X-Svc-Act-As)', { timeout: 120_000 }, () => {
  let b: Backend;
  let w: World;
  beforeAll(async () => {
    b = await sqliteBackend();
    w = await makeWorld(b.app);
  }, 120_000);
  afterAll(async () => {
    await b?.close();
  });

  const refused = [
    { who: 'alice as S', options: () => as(w.alice.token, w.s), code: 'error.sponsored.no_identity' },
    { who: 'alice as S2', options: () => as(w.alice.token, w.s2), code: 'error.sponsored.no_identity' },
    { who: 'bob as S', options: () => as(w.bob.token, w.s), code: 'error.sponsored.no_identity' },
    { who: 'carol as S', options: () => as(w.carol.token, w.s), code: 'error.auth.not_an_owner' },
  ];
  const routes: { path: string; body?: Record<string, unknown> }[] = [
    { path: '/v1/auth/reauthenticate', body: { password: PASSWORD } },
    { path: '/v1/auth/password', body: { current_password: PASSWORD, new_password: 'another long passphrase 42' } },
    { path: '/v1/auth/totp/enroll' },
    { path: '/v1/auth/totp/verify-enrollment', body: { code: '123456' } },
    { path: '/v1/auth/totp/disable', body: { code: '123456' } },
  ];
  for (const r of routes) {
    it(`POST ${r.path}`, async () => {
      const before = await b.dump();
      for (const c of refused) {
        const got = await call(b.app, 'POST', r.path, { ...c.options(), ...(r.body ? { body: r.body } : {}) });
        expect([got.status, got.body?.code], `${r.path} as ${c.who}: ${JSON.stringify(got.body)}`).toEqual([
          403,
          c.code,
        ]);
      }
      expect(await b.dump(), `refusing ${r.path} changed the database`).toEqual(before);
      // The reference says so.
      const doc = (await call(b.app, 'GET', '/openapi.json', { version: null })).body;
      expect(JSON.stringify(doc.paths[r.path].post.responses['403']), r.path).toContain('error.sponsored.no_identity');
    });
  }
});
