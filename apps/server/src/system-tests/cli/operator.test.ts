import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores } from '../../deps.js';

/**
 * The operator's commands on who may register and what the deployment holds, each run against
 * both stores: SQLite in a data directory, and PostgreSQL (a scratch database on PG_URL).
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('cli/operator.test.ts: PostgreSQL cases SKIPPED: PG_URL is not set.');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const quiet = { info() {}, warn() {}, error() {} };

/** A fresh deployment on one store, with the server's services over it as a running server holds them. */
async function deployment(store: 'sqlite' | 'pg', extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-op-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  let env: Record<string, string> = { SVC_DATA_DIR: dir, SVC_BASE_URL: 'http://127.0.0.1:8080', ...extra };
  if (store === 'pg') {
    const scratch = await createScratchDatabase(PG_URL!, 'cliop');
    cleanups.push(() => scratch.drop());
    env = { ...env, SVC_DATABASE_URL: scratch.url };
  }
  const config = readConfig(env);
  const stores = await openStores(config);
  const deps = await buildDeps(config, stores, { ...nodePlatform(), logger: quiet });
  cleanups.push(() => stores.close());
  const register = async (address: string) => {
    const r = await deps.accounts.register({ address, password: 'correct horse battery' });
    if (!r.ok) throw new Error(`register ${address}: ${r.code}`);
    return r.value;
  };
  return { env, stores, deps, register };
}

const STORES = PG_URL ? (['sqlite', 'pg'] as const) : (['sqlite'] as const);

describe.each(STORES)('operator CLI on %s', (store) => {
  it('allow-registration and disallow-registration edit the allowlist a running server reads at its next registration', {
    timeout: 60_000,
  }, async () => {
    const { env, deps } = await deployment(store, { SVC_REGISTRATION: 'allowlist' });
    const register = (address: string) => deps.accounts.register({ address, password: 'correct horse battery' });
    expect(await register('ann@example.org')).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });

    expect(await runCli(['allow-registration', 'Ann@Example.ORG'], env)).toEqual({
      code: 0,
      out: 'allowed to register: ann@example.org',
    });
    expect(await runCli(['allow-registration', 'ann@example.org'], env)).toEqual({
      code: 0,
      out: 'already allowed to register: ann@example.org',
    });
    expect(await runCli(['allow-registration', '@Family.Example'], env)).toEqual({
      code: 0,
      out: 'allowed to register: @family.example',
    });
    expect((await register('ann@example.org')).ok).toBe(true);
    expect((await register('kid@family.example')).ok).toBe(true);
    expect(await register('kid@sub.family.example')).toMatchObject({
      ok: false,
      code: 'error.auth.registration_closed',
    });

    const listed = await runCli(['registration-allowlist'], env);
    expect(listed.code).toBe(0);
    expect(listed.out.split('\n').map((l) => l.trim().split(' ')[0])).toEqual([
      'SVC_REGISTRATION=allowlist;',
      '@family.example',
      'ann@example.org',
    ]);

    expect(await runCli(['disallow-registration', '@family.example'], env)).toEqual({
      code: 0,
      out: 'no longer allowed to register: @family.example',
    });
    expect(await register('kid2@family.example')).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    // Wrong input and an entry that is not there: non-zero, one line, nothing changed.
    expect(await runCli(['disallow-registration', '@family.example'], env)).toMatchObject({
      code: 1,
      out: expect.stringMatching(/^error: @family.example is not on the registration allowlist/),
    });
    for (const bad of ['@', 'not-an-address', '@a b.org']) {
      const r = await runCli(['allow-registration', bad], env);
      expect(r.code, bad).toBe(1);
      expect(r.out.split('\n'), bad).toHaveLength(1);
    }
    expect((await runCli(['allow-registration'], env)).code).toBe(1);
    expect((await runCli(['allow-registration', 'a@example.org', 'b@example.org'], env)).code).toBe(2);
    expect((await deps.registration.list()).map((e) => e.entry)).toEqual(['ann@example.org']);
    // Under another mode the command still edits the list, and says it does not apply.
    const open = await runCli(['allow-registration', 'bob@example.org'], { ...env, SVC_REGISTRATION: 'open' });
    expect(open.out).toContain('note: SVC_REGISTRATION is open here');
  });

  it("accounts lists every account (table and --json); sessions and revoke-sessions show and end one account's sessions", {
    timeout: 60_000,
  }, async () => {
    const { env, stores, deps, register } = await deployment(store);
    expect(await runCli(['accounts'], env)).toEqual({ code: 0, out: 'no accounts' });
    const ann = await register('ann@example.org');
    const bob = await register('bob@example.org');
    const annId = (await stores.accounts.findAccountByAddress('ann@example.org'))!.id;
    const bobId = (await stores.accounts.findAccountByAddress('bob@example.org'))!.id;
    await deps.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null });
    const kid = await deps.sponsorship.create({ accountId: annId });
    if (!kid.ok) throw new Error(kid.code);
    expect(
      await stores.oidc.insertLink({
        issuer: 'https://idp.example',
        subject: 'bob',
        accountId: bobId,
        createdAt: Date.now(),
      }),
    ).toBe('linked');
    expect(await stores.totp.savePendingTotp({ accountId: bobId, sealedSecret: 'sealed', at: Date.now() })).toBe(true);
    expect(await stores.totp.confirmTotp({ accountId: bobId, sealedSecret: 'sealed', step: 1, at: Date.now() })).toBe(
      true,
    );
    await runCli(['lock', 'bob@example.org'], env);

    const listed = await runCli(['accounts', '--json'], env);
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.out) as Record<string, unknown>[];
    const byId = new Map(rows.map((r) => [r.account_id, r]));
    expect(rows).toHaveLength(3);
    expect(byId.get(annId)).toMatchObject({
      address: 'ann@example.org',
      sponsor: null,
      state: 'active',
      sessions_open: 2,
      totp: false,
      openid_issuers: [],
      quota: { charged_to: annId, state: 'OK', used: 0, reserved: 0, hard_limit: 10 * 1024 ** 3 },
    });
    expect(byId.get(annId)!.last_used_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(byId.get(bobId)).toMatchObject({
      state: 'locked',
      sessions_open: 0,
      last_used_at: null,
      totp: true,
      openid_issuers: ['https://idp.example'],
    });
    expect(byId.get(kid.value.accountId)).toMatchObject({
      address: null,
      sponsor: { account_id: annId, address: 'ann@example.org' },
      quota: { charged_to: annId },
    });

    const tableOut = await runCli(['accounts'], env);
    expect(tableOut.code).toBe(0);
    const lines = tableOut.out.split('\n');
    expect(lines[0]).toMatch(/^ID +ADDRESS +CREATED +STATE +QUOTA +SESSIONS +LAST USED +TOTP +OPENID$/);
    expect(lines.find((l) => l.startsWith(bobId))).toMatch(/bob@example\.org .* locked .* on +https:\/\/idp\.example$/);
    expect(lines.find((l) => l.startsWith(kid.value.accountId))).toContain('(sponsored by ann@example.org)');
    expect(lines.at(-1)).toBe('3 accounts');
    expect(await runCli(['accounts', '--csv'], env)).toMatchObject({ code: 1, out: expect.stringContaining('--json') });

    const sessions = await runCli(['sessions', 'ANN@example.org'], env);
    expect(sessions.code).toBe(0);
    expect(sessions.out.split('\n')).toHaveLength(3);
    expect(sessions.out).toContain(ann.sessionId);
    expect(await runCli(['sessions', bobId], env)).toEqual({ code: 0, out: `${bobId} has no open sessions` });

    expect(await runCli(['revoke-sessions', 'ann@example.org'], env)).toEqual({
      code: 0,
      out: `closed 2 sessions of ${annId}`,
    });
    expect(await deps.sessions.authenticate(ann.accessToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(await deps.sessions.refresh(ann.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    // Not a lock: the account signs in again.
    expect(
      (await deps.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }))
        .ok,
    ).toBe(true);
    expect(bob.accessToken).not.toBe(ann.accessToken);

    for (const name of ['sessions', 'revoke-sessions']) {
      expect(await runCli([name, 'nobody@example.org'], env), name).toMatchObject({
        code: 1,
        out: expect.stringContaining('no account nobody@example.org'),
      });
      expect((await runCli([name], env)).code, name).toBe(1);
      expect((await runCli([name, 'a', 'b'], env)).code, name).toBe(2);
    }
    expect((await runCli(['--help'], env)).out).toMatch(
      /accounts \[--json\][\s\S]*sessions <address\|id>[\s\S]*revoke-sessions <address\|id>/,
    );
  });

  it("lock ends the account's sessions: its access token is refused at the next request and refresh mints nothing", {
    timeout: 60_000,
  }, async () => {
    const { env, stores, deps, register } = await deployment(store);
    const ann = await register('ann@example.org');
    const other = await register('bob@example.org');
    const annId = (await stores.accounts.findAccountByAddress('ann@example.org'))!.id;
    expect((await deps.sessions.authenticate(ann.accessToken)).ok).toBe(true);
    expect(await runCli(['lock', 'ann@example.org'], env)).toEqual({
      code: 0,
      out: `locked ${annId}; closed 1 session`,
    });
    expect(await deps.sessions.authenticate(ann.accessToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(await deps.sessions.refresh(ann.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(
      await deps.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }),
    ).toMatchObject({ ok: false, code: 'error.auth.account_locked' });
    expect((await deps.sessions.authenticate(other.accessToken)).ok).toBe(true);
    expect(await runCli(['unlock', 'ann@example.org'], env)).toEqual({ code: 0, out: `unlocked ${annId}` });
    expect(
      (await deps.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }))
        .ok,
    ).toBe(true);
  });
});
