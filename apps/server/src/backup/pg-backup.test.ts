import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sha256Hex } from '@strongroom/core';
import { FsBlobStore } from '@strongroom/adapters-node';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';

/**
 * Backups on PostgreSQL: `backup` copies the key and the blobs the live ledger references and
 * prints the pg_dump command (never the password); `verify-backup` checks what it copied;
 * `restore` puts the key and blobs into an empty data dir and prints the pg_restore command.
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('pg-backup.test.ts: SKIPPED: PG_URL is not set.');

describe.skipIf(!PG_URL)('backups on PostgreSQL', { timeout: 60_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'sr-pg-backup-'));
  const dataDir = join(work, 'data');
  let scratch: ScratchDatabase;
  let env: Record<string, string>;
  const hashes: string[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'backup');
    env = { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: scratch.url, SVC_BASE_URL: 'http://127.0.0.1:8080' };
    expect((await runCli(['init'], env)).code).toBe(0);
    const store = new FsBlobStore(join(dataDir, 'blobs'));
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    for (let i = 0; i < 2; i++) {
      const bytes = new Uint8Array(1000 + i).fill(i + 1);
      const hash = sha256Hex(bytes);
      await store.stage(`s${i}`, (async function* () {
        yield bytes;
      })(), bytes.length);
      await store.commit(`s${i}`, hash);
      await client.query('INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES ($1, $2, gen_random_uuid(), NULL, 1)', [hash, bytes.length]);
      hashes.push(hash);
    }
    await client.end();
  }, 60_000);
  afterAll(async () => {
    await scratch?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  it('dumps the database with pg_dump (no password on any command line), copies key and blobs; verify and restore work from it', async () => {
    const dir = join(work, 'backup');
    const r = await runCli(['backup', dir], env);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('strongroom.pgdump (pg_dump of the snapshot');
    expect(r.out).not.toContain(scratch.url);
    expect(r.out).not.toContain(new URL(scratch.url).password || 'no password in this URL');
    expect(existsSync(join(dir, 'strongroom.db'))).toBe(false);
    expect(existsSync(join(dir, 'strongroom.pgdump'))).toBe(true);
    expect(r.out).toMatch(/^[0-9a-f]{64} {2}strongroom\.pgdump$/m);
    expect(r.out).toContain('blobs: 2 referenced by the ledger, 2001 bytes');
    const v = await runCli(['verify-backup', dir], env);
    expect(v.code, v.out).toBe(0);
    expect(v.out).toContain('2 blobs present');
    const target = join(work, 'restored');
    const restored = await runCli(['restore', dir], { ...env, SVC_DATA_DIR: target });
    expect(restored.code, restored.out).toBe(0);
    expect(restored.out).toContain(`pg_restore --no-owner --dbname="$SVC_DATABASE_URL" ${dir}/strongroom.pgdump`);
    const store = new FsBlobStore(join(target, 'blobs'));
    for (const h of hashes) expect(sha256Hex((await bytesOf(await store.read(h)))!)).toBe(h);
    expect(readdirSync(target).sort()).toEqual(['blobs', 'secret.key']);
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
        await store.stage(`w${added}`, (async function* () {
          yield bytes;
        })(), bytes.length);
        await store.commit(`w${added}`, hash);
        await writer.query('INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES ($1, $2, gen_random_uuid(), NULL, 1)', [hash, bytes.length]);
        added++;
      }
    })();
    const dir = join(work, 'racing');
    let r: Awaited<ReturnType<typeof runCli>>;
    try {
      r = await runCli(['backup', dir], env);
    } finally {
      stop = true;
      await writing;
    }
    const { rows } = await writer.query<{ n: string }>('SELECT count(*) AS n FROM blobs');
    await writer.end();
    expect(r.code, r.out).toBe(0);
    // The dump's own ledger, read back with pg_restore, against the blobs the backup copied.
    const listed = execFileSync('pg_restore', ['--data-only', '--table=blobs', '--file=-', join(dir, 'strongroom.pgdump')], { encoding: 'utf8' });
    const dumped = [...listed.matchAll(/^([0-9a-f]{64})\t/gm)].map((m) => m[1]!).sort();
    const copied = readFileSync(join(dir, 'MANIFEST.sha256'), 'utf8')
      .split('\n')
      .flatMap((line) => /blobs\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(line)?.[1] ?? [])
      .sort();
    expect(dumped).toEqual(copied);
    for (const h of hashes) expect(dumped).toContain(h);
    // Rows landed after the snapshot: the race was run, not missed.
    expect(Number(rows[0]!.n)).toBeGreaterThan(dumped.length);
    expect((await runCli(['verify-backup', dir], env)).code).toBe(0);
  });
});

/** A blob store read, collected (these blobs are small). */
async function bytesOf(stream: AsyncIterable<Uint8Array> | null): Promise<Uint8Array | null> {
  if (stream === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  return new Uint8Array(Buffer.concat(parts));
}
