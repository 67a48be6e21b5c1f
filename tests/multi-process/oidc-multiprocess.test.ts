import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { sha256, toBase64url, utf8 } from '@strongroom/core';
import { fetchCall } from '../harness/http.js';
import { Browser, startTestProvider, type TestProvider } from '../harness/oidc.js';
import { startServer as startProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * An OpenID flow that starts on one server process and finishes on another, over one PostgreSQL
 * database: the state, the sealed PKCE verifier and the login code live in the database, not in a
 * process. PGlite lives inside one process, so this needs PG_URL.
 */

const PG_URL = pgUrlFromEnv();
// The deployment's public base URL (a load balancer in front of both processes).
const BASE_URL = 'http://127.0.0.1:8080';
const CALLBACK = `${BASE_URL}/v1/auth/oidc/callback`;
const RETURN = 'https://app.example/done';
/** Every flow carries the app's PKCE challenge (spec §6.4). */
const APP_VERIFIER = 'multiprocess-app-verifier'.padEnd(43, 'm');
const APP_CHALLENGE = toBase64url(sha256(utf8(APP_VERIFIER)));
const DATA_DIR = mkdtempSync(join(tmpdir(), 'sr-oidc-multiproc-'));

if (!PG_URL)
  console.warn('oidc-multiprocess.test.ts: SKIPPED: PG_URL is not set (several processes need a PostgreSQL server).');

type Server = ServerProcess;

const startServer = (env: Record<string, string>): Promise<Server> =>
  startProcess({ env: { ...env, SVC_DATA_DIR: DATA_DIR, SVC_BASE_URL: BASE_URL } });

describe.skipIf(!PG_URL)(
  'an OpenID flow across two server processes on PostgreSQL (PG_URL)',
  { timeout: 60_000 },
  () => {
    let db: ScratchDatabase;
    let idp: TestProvider;
    let a: Server;
    let b: Server;

    beforeAll(async () => {
      db = await createScratchDatabase(PG_URL!, 'oidcmp');
      idp = await startTestProvider({ redirectUris: [CALLBACK] });
      const env = {
        SVC_DATABASE_URL: db.url,
        SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
        SVC_OIDC_ISSUER: idp.issuer,
        SVC_OIDC_CLIENT_ID: idp.clientId,
        SVC_OIDC_CLIENT_SECRET: idp.clientSecret!,
        SVC_OIDC_RETURN_URIS: RETURN,
      };
      a = await startServer(env);
      b = await startServer(env);
    }, 90_000);
    afterAll(async () => {
      await Promise.all([a, b].filter(Boolean).map((s) => s.stop()));
      await idp?.close();
      await db?.drop();
      rmSync(DATA_DIR, { recursive: true, force: true });
    });

    /** Hands the provider's redirect to one process, as a load balancer would; returns where it sends the browser. */
    async function deliver(server: Server, callbackUrl: URL): Promise<{ status: number; location: URL | null }> {
      const res = await fetch(server.url + callbackUrl.pathname + callbackUrl.search, { redirect: 'manual' });
      await res.arrayBuffer();
      const location = res.headers.get('location');
      return { status: res.status, location: location === null ? null : new URL(location) };
    }

    it('starts on one process, comes back to the other, and the session works on both', async () => {
      const started = await fetchCall(a.url, 'POST', '/v1/auth/oidc/start', {
        body: { return_to: RETURN, app_challenge: APP_CHALLENGE },
      });
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const sub = `mp-${Math.random().toString(36).slice(2, 10)}`;
      idp.willSignIn({ sub, email: `${sub}@example.org`, emailVerified: true });
      const callbackUrl = await new Browser().follow(started.body.authorization_url, CALLBACK);
      const back = await deliver(b, callbackUrl);
      expect(back.status).toBe(302);
      const code = back.location!.searchParams.get('login_code')!;
      expect(code).toBeTruthy();
      // The state was used up on b: a replay on a is refused.
      expect((await deliver(a, callbackUrl)).status).toBe(400);
      const pair = await fetchCall(a.url, 'POST', '/v1/auth/oidc/complete', {
        body: { login_code: code, app_verifier: APP_VERIFIER },
      });
      expect(pair.status, JSON.stringify(pair.body)).toBe(200);
      // The login code was used up on a: b refuses it.
      expect(
        (
          await fetchCall(b.url, 'POST', '/v1/auth/oidc/complete', {
            body: { login_code: code, app_verifier: APP_VERIFIER },
          })
        ).status,
      ).toBe(401);
      const profile = await fetchCall(b.url, 'GET', '/v1/auth/profile', { token: pair.body.access_token });
      expect(profile.body.address).toBe(`${sub}@example.org`);
      const sessions = await fetchCall(a.url, 'GET', '/v1/auth/sessions', { token: pair.body.access_token });
      expect(sessions.body.sessions.map((s: { method: string }) => s.method)).toEqual(['oidc']);
    });
  },
);
