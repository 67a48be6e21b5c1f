import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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
    expect((await runCli(['rotate-key'], env)).code).toBe(0);
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

  it('copies key and blobs, prints pg_dump without the password; verify and restore work from it', async () => {
    const dir = join(work, 'backup');
    const r = await runCli(['backup', dir], env);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`pg_dump --format=custom --no-owner --file=${dir}/strongroom.pgdump "$SVC_DATABASE_URL"`);
    expect(r.out).not.toContain(scratch.url);
    expect(existsSync(join(dir, 'strongroom.db'))).toBe(false);
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
    // The printed command really completes it, when pg_dump is installed.
    let dump = true;
    try {
      execFileSync('pg_dump', ['--version'], { stdio: 'pipe' });
    } catch {
      dump = false;
    }
    if (dump) {
      execFileSync('sh', ['-c', r.out.split('\n').find((l) => l.includes('pg_dump --format'))!.trim()], { env: { ...process.env, SVC_DATABASE_URL: scratch.url } });
      expect(existsSync(join(dir, 'strongroom.pgdump'))).toBe(true);
    }
  });
});

/** A blob store read, collected (these blobs are small). */
async function bytesOf(stream: AsyncIterable<Uint8Array> | null): Promise<Uint8Array | null> {
  if (stream === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  return new Uint8Array(Buffer.concat(parts));
}
