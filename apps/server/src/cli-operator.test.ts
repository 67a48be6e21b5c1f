import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, pgUrlFromEnv } from '@strongroom/adapters-pg/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { readConfig } from './config.js';
import { buildDeps, nodePlatform, openStores } from './deps.js';

/**
 * The operator's commands on who may register and what the deployment holds, each run against
 * both stores: SQLite in a data directory, and PostgreSQL (a scratch database on PG_URL).
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('cli-operator.test.ts: PostgreSQL cases SKIPPED: PG_URL is not set.');

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
  it('allow-registration and disallow-registration edit the allowlist a running server reads at its next registration', { timeout: 60_000 }, async () => {
    const { env, deps } = await deployment(store, { SVC_REGISTRATION: 'allowlist' });
    const register = (address: string) => deps.accounts.register({ address, password: 'correct horse battery' });
    expect(await register('ann@example.org')).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });

    expect(await runCli(['allow-registration', 'Ann@Example.ORG'], env)).toEqual({ code: 0, out: 'allowed to register: ann@example.org' });
    expect(await runCli(['allow-registration', 'ann@example.org'], env)).toEqual({ code: 0, out: 'already allowed to register: ann@example.org' });
    expect(await runCli(['allow-registration', '@Family.Example'], env)).toEqual({ code: 0, out: 'allowed to register: @family.example' });
    expect((await register('ann@example.org')).ok).toBe(true);
    expect((await register('kid@family.example')).ok).toBe(true);
    expect(await register('kid@sub.family.example')).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });

    const listed = await runCli(['registration-allowlist'], env);
    expect(listed.code).toBe(0);
    expect(listed.out.split('\n').map((l) => l.trim().split(' ')[0])).toEqual(['SVC_REGISTRATION=allowlist;', '@family.example', 'ann@example.org']);

    expect(await runCli(['disallow-registration', '@family.example'], env)).toEqual({ code: 0, out: 'no longer allowed to register: @family.example' });
    expect(await register('kid2@family.example')).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    // Wrong input and an entry that is not there: non-zero, one line, nothing changed.
    expect(await runCli(['disallow-registration', '@family.example'], env)).toMatchObject({ code: 1, out: expect.stringMatching(/^error: @family.example is not on the registration allowlist/) });
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
});
