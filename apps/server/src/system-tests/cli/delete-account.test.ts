import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores } from '../../deps.js';

const PASSWORD = 'correct horse battery';
const dirs: string[] = [];
const scratches: ScratchDatabase[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  for (const s of scratches.splice(0)) await s.drop();
});

const PG_URL = pgUrlFromEnv();
const backends: [string, () => Promise<Record<string, string>>][] = [
  ['SQLite', async () => ({})],
  ...(PG_URL === null
    ? []
    : ([
        [
          'PostgreSQL',
          async () => {
            const s = await createScratchDatabase(PG_URL, 'cli_delete');
            scratches.push(s);
            return { SVC_DATABASE_URL: s.url };
          },
        ],
      ] as [string, () => Promise<Record<string, string>>][])),
];

for (const [name, database] of backends) {
  describe(`cli delete-account (${name})`, () => {
    it('deletes the account named by address or id, its sponsored account with it; the address registers anew; a second run finds nothing left; an unknown account exits 1', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-delete-'));
      dirs.push(dir);
      const env = { SVC_DATA_DIR: dir, SVC_BASE_URL: 'http://127.0.0.1:8080', ...(await database()) };
      const config = readConfig(env);
      const stores = await openStores(config);
      try {
        const deps = await buildDeps(config, stores, {
          ...nodePlatform(),
          logger: { info() {}, warn() {}, error() {} },
        });
        expect(
          (await deps.accounts.register({ address: 'leaver@example.org', password: PASSWORD, cohortHash: null })).ok,
        ).toBe(true);
        expect(
          (await deps.accounts.register({ address: 'stayer@example.org', password: PASSWORD, cohortHash: null })).ok,
        ).toBe(true);
        const leaver = (await stores.accounts.findAccountByAddress('leaver@example.org'))!;
        const kid = await deps.sponsorship.create({ accountId: leaver.id });
        expect(kid.ok).toBe(true);

        const done = await runCli(['delete-account', 'Leaver@Example.org'], env);
        expect(done).toEqual({
          code: 0,
          out: expect.stringContaining(
            `deleted ${leaver.id} and its sponsored accounts ${kid.ok ? kid.value.accountId : ''}`,
          ),
        });
        expect(await stores.accounts.findAccountByAddress('leaver@example.org')).toBeNull();
        // The operator's listing shows the accounts that are left.
        const listed = await runCli(['accounts', '--json'], env);
        expect(listed.code).toBe(0);
        expect(listed.out).not.toContain(leaver.id);
        expect(listed.out).toContain('stayer@example.org');
        expect(await stores.sponsorship.findSponsored(kid.ok ? kid.value.accountId : '')).toBeNull();
        expect(
          (await deps.accounts.login({ address: 'leaver@example.org', password: PASSWORD, cohortHash: null })).ok,
        ).toBe(false);
        expect(
          (await deps.accounts.login({ address: 'stayer@example.org', password: PASSWORD, cohortHash: null })).ok,
        ).toBe(true);

        // Again, by id: what a request in flight at the deletion may have left goes too (here, nothing).
        expect(await runCli(['delete-account', leaver.id], env)).toEqual({
          code: 0,
          out: `deleted ${leaver.id}; 0 uploads cancelled, 0 assets purged (the next gc-sweep credits their bytes)`,
        });
        expect(await runCli(['delete-account', 'nobody@example.org'], env)).toMatchObject({
          code: 1,
          out: expect.stringContaining('no account'),
        });
        expect(await runCli(['delete-account'], env)).toMatchObject({
          code: 1,
          out: expect.stringContaining('name an account'),
        });
        expect(await runCli(['delete-account', 'a', 'b'], env)).toMatchObject({ code: 2 });
        expect((await runCli(['--help'], env)).out).toContain('delete-account <address|id>');

        expect(
          (await deps.accounts.register({ address: 'leaver@example.org', password: PASSWORD, cohortHash: null })).ok,
        ).toBe(true);
        expect((await stores.accounts.findAccountByAddress('leaver@example.org'))!.id).not.toBe(leaver.id);
      } finally {
        await stores.close();
      }
    }, 60_000);
  });
}
