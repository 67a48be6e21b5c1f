import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SqliteQuotaStore } from './quota-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function compete(data: Record<string, unknown>): Promise<string[]> {
  const worker = fileURLToPath(new URL('./quota-race.worker.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', worker, JSON.stringify(data)], (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout)),
    );
  });
}

describe('SqliteQuotaStore under real concurrency', () => {
  it('eight processes on eight connections, 300 creations each, never reserve past the hard limit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quota-race-'));
    dirs.push(dir);
    const file = join(dir, 'race.db');
    openSqliteDatabase(file).close(); // migrate once before the race
    const payer = '0190f000-0000-7000-8000-000000000001';
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, t) =>
        compete({ file, payer, count: 300, declared: 3, hard: 1000, prefix: `t${t}` }),
      ),
    );
    const all = results.flat();
    // 2,400 attempts of 3 bytes against 1000: exactly floor(1000 / 3) = 333 fit.
    expect(all.filter((o) => o === 'reserved')).toHaveLength(333);
    expect(all.filter((o) => o === 'exceeded')).toHaveLength(2067);
    const db = openSqliteDatabase(file);
    expect((await new SqliteQuotaStore(db).readLedger(payer, 1_000)).reserved).toBe(999);
    expect((db.prepare('SELECT count(*) AS n FROM upload_sessions').get() as { n: number }).n).toBe(333);
    db.close();
  }, 60_000);
});
