import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sha256Hex } from '@strongroom/core';
import { FsBlobStore } from '@strongroom/adapters-node';
import { createPgPorts, openPgDatabase } from '@strongroom/adapters-pg';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { newIdentity } from './age.js';

/**
 * Backups on PostgreSQL: `backup` runs pg_dump (never the password on a command line) and copies
 * the key and the blobs the live ledger references, the dump and the key age-encrypted;
 * `verify-backup` checks what it copied; `restore` puts the key, blobs and the decrypted dump into
 * an empty data dir and prints the pg_restore command, then `close-restored-sessions` closes what
 * was open at the backup (the server refuses to start until it ran).
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('pg-backup.test.ts: SKIPPED: PG_URL is not set.');

describe.skipIf(!PG_URL)('backups on PostgreSQL', { timeout: 60_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'sr-pg-backup-'));
  const dataDir = join(work, 'data');
  let scratch: ScratchDatabase;
  let restoredDb: ScratchDatabase | undefined;
  let env: Record<string, string>;
  const identityFile = join(work, 'identity.txt');
  let recipient = '';
  const session = { id: '0190eeee-0000-7000-8000-000000000002', accountId: '0190eeee-0000-7000-8000-000000000001' };
  const hashes: string[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'backup');
    env = { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: scratch.url, SVC_BASE_URL: 'http://127.0.0.1:8080' };
    expect((await runCli(['init'], env)).code).toBe(0);
    const id = await newIdentity(new Date());
    writeFileSync(identityFile, id.identityFile, { mode: 0o600 });
    recipient = id.recipient;
    // An account with an open session: what the restore must close.
    const live = await openPgDatabase(scratch.url, { maxConnections: 1, create: false });
    try {
      const ports = createPgPorts(live.db);
      await ports.accounts.createAccount({
        id: session.accountId,
        address: 'pg-backup@example.org',
        addressKey: 'pg-backup@example.org',
        passwordHash: 'x',
        displayName: null,
        createdAt: 1,
        lockedAt: null,
        credentialsChangedAt: null,
      });
      const now = Date.now();
      expect(
        await ports.accounts.openSession(
          {
            id: session.id,
            accountId: session.accountId,
            tokenHash: 'ab'.repeat(32),
            cohortHash: null,
            createdAt: now,
            refreshedAt: now,
            lastUsedAt: now,
            accessFloor: 0,
            closedAt: null,
            authenticatedAt: now,
            method: 'password',
          },
          null,
        ),
      ).toBe(true);
    } finally {
      await live.close();
    }
    const store = new FsBlobStore(join(dataDir, 'blobs'));
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    for (let i = 0; i < 2; i++) {
      const bytes = new Uint8Array(1000 + i).fill(i + 1);
      const hash = sha256Hex(bytes);
      await store.stage(
        `s${i}`,
        (async function* () {
          yield bytes;
        })(),
        bytes.length,
      );
      await store.commit(`s${i}`, hash);
      await client.query(
        'INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES ($1, $2, gen_random_uuid(), NULL, 1)',
        [hash, bytes.length],
      );
      hashes.push(hash);
    }
    await client.end();
  }, 60_000);
  afterAll(async () => {
    await scratch?.drop();
    await restoredDb?.drop();
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('dumps the database with pg_dump (no password on any command line), encrypts it and the key, copies blobs; verify, restore, pg_restore and close-restored-sessions work from it', async () => {
    const dir = join(work, 'backup');
    const r = await runCli(['backup', '--recipient', recipient, dir], env);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('strongroom.pgdump.age (pg_dump of the snapshot');
    expect(r.out).not.toContain(scratch.url);
    expect(r.out).not.toContain(new URL(scratch.url).password || 'no password in this URL');
    expect(existsSync(join(dir, 'strongroom.db'))).toBe(false);
    expect(existsSync(join(dir, 'strongroom.pgdump'))).toBe(false);
    expect(readFileSync(join(dir, 'strongroom.pgdump.age')).subarray(0, 21).toString()).toBe('age-encryption.org/v1');
    // No plaintext dump left beside the live data either.
    expect(existsSync(join(dataDir, 'backup-snapshot.tmp'))).toBe(false);
    expect(r.out).toMatch(/^[0-9a-f]{64} {2}strongroom\.pgdump\.age$/m);
    expect(r.out).toContain('blobs: 2 referenced by the ledger, 2001 bytes');
    const v = await runCli(['verify-backup', '--identity-file', identityFile, dir], env);
    expect(v.code, v.out).toBe(0);
    expect(v.out).toContain('2 blobs present');
    const target = join(work, 'restored');
    restoredDb = await createScratchDatabase(PG_URL!, 'restored');
    const restoreEnv = { ...env, SVC_DATA_DIR: target, SVC_DATABASE_URL: restoredDb.url };
    const restored = await runCli(['restore', '--identity-file', identityFile, dir], restoreEnv);
    expect(restored.code, restored.out).toBe(0);
    expect(restored.out).toContain(`pg_restore --no-owner --dbname="$SVC_DATABASE_URL" ${target}/strongroom.pgdump`);
    expect(restored.out).toContain('npm run cli -- close-restored-sessions');
    const store = new FsBlobStore(join(target, 'blobs'));
    for (const h of hashes) expect(sha256Hex((await bytesOf(await store.read(h)))!)).toBe(h);
    expect(readdirSync(target).sort()).toEqual(['blobs', 'restore.close-sessions', 'secret.key', 'strongroom.pgdump']);
    expect(statSync(join(target, 'strongroom.pgdump')).mode & 0o077).toBe(0);
    execFileSync('pg_restore', ['--no-owner', `--dbname=${restoredDb.url}`, join(target, 'strongroom.pgdump')]);
    // The copy as restored still has the session open: nothing starts on it until the step ran.
    const refused = await runCli(['rotate-key'], restoreEnv);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain(
      `${join(target, 'restore.close-sessions')}: a restore is not finished; after pg_restore, run \`npm run cli -- close-restored-sessions\``,
    );
    const closed = await runCli(['close-restored-sessions'], restoreEnv);
    expect(closed.code, closed.out).toBe(0);
    expect(closed.out).toMatch(/^closed what was open at the backup \(\d{4}-\d\d-\d\dT[\d:.]+Z\): 1 sessions, /);
    const client = new pg.Client({ connectionString: restoredDb.url });
    await client.connect();
    const { rows } = await client.query<{ closed_at: string | null }>('SELECT closed_at FROM sessions WHERE id = $1', [
      session.id,
    ]);
    await client.end();
    expect(rows[0]?.closed_at).not.toBeNull();
    expect(existsSync(join(target, 'restore.close-sessions'))).toBe(false);
    // The plaintext dump it loaded goes with the step.
    expect(closed.out).toContain(`removed ${join(target, 'strongroom.pgdump')} (the decrypted dump pg_restore loaded)`);
    expect(readdirSync(target).sort()).toEqual(['blobs', 'secret.key']);
    expect((await runCli(['rotate-key'], restoreEnv)).code).toBe(0);
    // Not a second time, and never on a deployment no restore waits on.
    expect((await runCli(['close-restored-sessions'], restoreEnv)).out).toMatch(
      /restore\.close-sessions: missing; no restore into SVC_DATA_DIR waits for this step/,
    );
  });

  it("the dump's ledger and the copied blobs agree while the ledger grows: the dump is of the snapshot the blob list was read in", async () => {
    // Uploads keep landing while the backup runs (bytes stored, then the ledger row, as the server
    // does). Whatever the dump's ledger names, the copy must hold; taken the other way round (blobs
    // first, the dump after), the dump named blobs stored after the copy.
    const store = new FsBlobStore(join(dataDir, 'blobs'));
    const writer = new pg.Client({ connectionString: scratch.url });
    await writer.connect();
    let stop = false;
    let added = 0;
    const writing = (async () => {
      while (!stop) {
        const bytes = new TextEncoder().encode(`landed while backing up ${added}`);
        const hash = sha256Hex(bytes);
        await store.stage(
          `w${added}`,
          (async function* () {
            yield bytes;
          })(),
          bytes.length,
        );
        await store.commit(`w${added}`, hash);
        await writer.query(
          'INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES ($1, $2, gen_random_uuid(), NULL, 1)',
          [hash, bytes.length],
        );
        added++;
      }
    })();
    const dir = join(work, 'racing');
    let r: Awaited<ReturnType<typeof runCli>>;
    try {
      r = await runCli(['backup', '--unencrypted', dir], env);
    } finally {
      stop = true;
      await writing;
    }
    const { rows } = await writer.query<{ n: string }>('SELECT count(*) AS n FROM blobs');
    await writer.end();
    expect(r.code, r.out).toBe(0);
    // The dump's own ledger, read back with pg_restore, against the blobs the backup copied.
    const listed = execFileSync(
      'pg_restore',
      ['--data-only', '--table=blobs', '--file=-', join(dir, 'strongroom.pgdump')],
      { encoding: 'utf8' },
    );
    const dumped = [...listed.matchAll(/^([0-9a-f]{64})\t/gm)].map((m) => m[1]!).sort();
    const copied = readFileSync(join(dir, 'MANIFEST.sha256'), 'utf8')
      .split('\n')
      .flatMap((line) => /blobs\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(line)?.[1] ?? [])
      .sort();
    expect(dumped).toEqual(copied);
    for (const h of hashes) expect(dumped).toContain(h);
    // Rows landed after the snapshot: the race was run, not missed.
    expect(Number(rows[0]!.n)).toBeGreaterThan(dumped.length);
    expect((await runCli(['verify-backup', dir], env)).out).toMatch(
      /^error: .*secret\.key\.age: is not in this backup \(an unencrypted backup never holds the key\)/,
    );
    expect((await runCli(['verify-backup', '--key-file', join(dataDir, 'secret.key'), dir], env)).code).toBe(0);
  });
});

/** A blob store read, collected (these blobs are small). */
async function bytesOf(stream: AsyncIterable<Uint8Array> | null): Promise<Uint8Array | null> {
  if (stream === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  return new Uint8Array(Buffer.concat(parts));
}
