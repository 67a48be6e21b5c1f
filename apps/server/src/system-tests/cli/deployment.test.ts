import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS, FILE_COMMANDS, runCli } from '../../cli.js';
import { redactedUrl } from '../../startup-checks.js';

/**
 * A mistyped SVC_DATA_DIR (or a database URL naming an empty database) given to a command that
 * works on an existing deployment is refused in one line naming it, and nothing is created there:
 * no directory, no key, no database, no migration. Only the commands meant to create a deployment
 * do (`init`, `restore`; the server's first start is startup.test.ts's).
 */

/** The commands that make a deployment where there is none; every other one needs one. */
const CREATING = new Set(['init', 'restore']);
/** Commands on a backup or its keys alone, not on a deployment: they read no data dir and write none. */
const ON_BACKUPS = new Set(['verify-backup', 'backup-keygen']);
/** Run by the server it belongs to, never by an operator. */
const INTERNAL = new Set(
  Object.entries(FILE_COMMANDS)
    .filter(([, c]) => c.hidden)
    .map(([n]) => n),
);

const onDeployments = [...Object.keys(COMMANDS), ...Object.keys(FILE_COMMANDS)].filter(
  (n) => !CREATING.has(n) && !ON_BACKUPS.has(n) && !INTERNAL.has(n),
);
/** Arguments that get each command past its own checks to where it would open the deployment. */
const args = (name: string, work: string): string[] =>
  name === 'backup' ? ['--unencrypted', join(work, 'backup-target')] : name === 'blobs' ? ['verify'] : [];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function work(): string {
  const d = mkdtempSync(join(tmpdir(), 'sr-cli-deploy-'));
  dirs.push(d);
  return d;
}

describe('CLI commands on a deployment that is not there (SQLite)', () => {
  it('finds the commands to check', () => {
    expect(onDeployments).toEqual(
      expect.arrayContaining(['gc-sweep', 'suspend', 'quota-limits', 'rotate-key', 'backup', 'lock', 'sponsor']),
    );
    expect(Object.keys(COMMANDS)).toContain('init');
  });

  for (const name of onDeployments) {
    it(`${name}: a data dir that does not exist, or holds no database, is refused in one line naming it; nothing is created`, async () => {
      const w = work();
      const typo = join(w, 'dtaa');
      const r = await runCli([name, ...args(name, w)], { SVC_DATA_DIR: typo, SVC_BASE_URL: 'http://127.0.0.1:8080' });
      expect(r.code, r.out).toBe(1);
      expect(r.out.split('\n')).toHaveLength(1);
      expect(r.out).toContain(`no deployment at SVC_DATA_DIR=${typo}`);
      expect(readdirSync(w)).toEqual([]);
      // An empty directory (a volume not mounted yet): the same, and it stays empty.
      const empty = join(w, 'empty');
      mkdirSync(empty);
      const e = await runCli([name, ...args(name, w)], { SVC_DATA_DIR: empty, SVC_BASE_URL: 'http://127.0.0.1:8080' });
      expect(e.code, e.out).toBe(1);
      expect(e.out).toContain(`no deployment at SVC_DATA_DIR=${empty}`);
      expect(readdirSync(empty)).toEqual([]);
      expect(readdirSync(w)).toEqual(['empty']);
    });
  }

  it('init creates the deployment, as the first start does, and says so again when it is there; then every command finds it', async () => {
    const w = work();
    const env = { SVC_DATA_DIR: join(w, 'data'), SVC_BASE_URL: 'http://127.0.0.1:8080' };
    const first = await runCli(['init'], env);
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain(`SVC_DATA_DIR=${env.SVC_DATA_DIR}`);
    expect(existsSync(join(env.SVC_DATA_DIR, 'strongroom.db'))).toBe(true);
    expect(existsSync(join(env.SVC_DATA_DIR, 'secret.key'))).toBe(true);
    expect((await runCli(['init'], env)).code).toBe(0);
    expect((await runCli(['rotate-key'], env)).code).toBe(0);
    expect((await runCli(['gc-sweep'], env)).code).toBe(0);
    expect((await runCli(['backup', '--unencrypted', join(w, 'b')], env)).code).toBe(0);
  });

  it('a deployment whose key file is gone is refused naming the key, and no new key is made', async () => {
    const w = work();
    const env = { SVC_DATA_DIR: join(w, 'data'), SVC_BASE_URL: 'http://127.0.0.1:8080' };
    expect((await runCli(['init'], env)).code).toBe(0);
    rmSync(join(env.SVC_DATA_DIR, 'secret.key'));
    const r = await runCli(['rotate-key'], env);
    expect(r.code, r.out).toBe(1);
    expect(r.out.split('\n')).toHaveLength(1);
    expect(r.out).toContain(join(env.SVC_DATA_DIR, 'secret.key'));
    expect(existsSync(join(env.SVC_DATA_DIR, 'secret.key'))).toBe(false);
  });
});

const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('cli/deployment.test.ts: PostgreSQL cases SKIPPED: PG_URL is not set.');

describe.skipIf(!PG_URL)('CLI commands on a deployment that is not there (PostgreSQL)', { timeout: 120_000 }, () => {
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'clideploy');
  }, 60_000);
  afterAll(async () => {
    await scratch?.drop();
  });

  /** The tables of the scratch database, in any schema but the catalog's: none while nothing was migrated. */
  async function tables(): Promise<string[]> {
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    try {
      const r = await client.query<{ t: string }>(
        "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
      );
      return r.rows.map((x) => x.t);
    } finally {
      await client.end();
    }
  }

  it('an empty database is neither migrated nor initialised by any command on a deployment; init does, then they work', async () => {
    const w = work();
    const env = { SVC_DATA_DIR: join(w, 'data'), SVC_DATABASE_URL: scratch.url, SVC_BASE_URL: 'http://127.0.0.1:8080' };
    for (const name of onDeployments) {
      const r = await runCli([name, ...args(name, w)], env);
      expect(r.code, `${name}: ${r.out}`).toBe(1);
      expect(r.out.split('\n'), name).toHaveLength(1);
      expect(r.out, name).toContain(`no deployment in SVC_DATABASE_URL=${redactedUrl(scratch.url)}`);
      expect(await tables(), name).toEqual([]);
      expect(readdirSync(w), name).toEqual([]);
    }
    expect((await runCli(['init'], env)).code).toBe(0);
    expect(await tables()).toContain('public.accounts');
    expect((await runCli(['rotate-key'], env)).code).toBe(0);
    expect((await runCli(['gc-sweep'], env)).code).toBe(0);
  });
});
