import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteBackupReader } from './backup.js';
import { MIGRATIONS_FOLDER, openSqliteDatabase } from './migrate.js';

const dir = mkdtempSync(join(tmpdir(), 'sr-sqlite-upgrade-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A migrations folder holding the first `count` migrations: the schema an existing deployment runs. */
function migrationsUpTo(count: number): string {
  const folder = join(dir, `first-${count}`);
  mkdirSync(join(folder, 'meta'), { recursive: true });
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string }[];
  };
  const entries = journal.entries.slice(0, count);
  for (const e of entries) cpSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(folder, `${e.tag}.sql`));
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  return folder;
}
const firstMigrationOnly = () => migrationsUpTo(1);
const migrationIndex = (tag: string): number =>
  (
    JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] }
  ).entries.findIndex((e) => e.tag === tag);

describe('SQLite schema upgrade of a database holding data', () => {
  it('migrates accounts and sessions forward, rebuilt tables included, with every reference intact', () => {
    const file = join(dir, 'upgrade.db');
    const old = openSqliteDatabase(file, { migrationsFolder: firstMigrationOnly() });
    old
      .prepare(
        "INSERT INTO accounts (id, address, address_key, password_hash, display_name, created_at) VALUES ('a1', 'A@x.org', 'a@x.org', 'h', NULL, 1)",
      )
      .run();
    old
      .prepare(
        "INSERT INTO sessions (id, account_id, token_hash, cohort_hash, created_at, refreshed_at, last_used_at, access_floor) VALUES ('s1', 'a1', 't', NULL, 1, 1, 1, 1)",
      )
      .run();
    old.close();
    const db = openSqliteDatabase(file);
    try {
      expect(db.prepare("SELECT address, password_hash AS hash FROM accounts WHERE id = 'a1'").get()).toEqual({
        address: 'A@x.org',
        hash: 'h',
      });
      expect(db.prepare("SELECT account_id AS accountId, method FROM sessions WHERE id = 's1'").get()).toEqual({
        accountId: 'a1',
        method: 'password',
      });
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(db.pragma('foreign_key_check')).toEqual([]);
      // The rebuilt table still enforces what it references and what references it.
      expect(() =>
        db
          .prepare(
            "INSERT INTO sessions (id, account_id, token_hash, created_at, refreshed_at, last_used_at, access_floor) VALUES ('s2', 'nobody', 't2', 1, 1, 1, 1)",
          )
          .run(),
      ).toThrow(/FOREIGN KEY/);
    } finally {
      db.close();
    }
  });

  it("the open-upload counter starts as the count of each payer's sessions in an open state", () => {
    const file = join(dir, 'counter.db');
    const old = openSqliteDatabase(file, {
      migrationsFolder: migrationsUpTo(migrationIndex('0005_open_upload_counter')),
    });
    old.prepare("INSERT INTO quota_accounts (account_id, reserved) VALUES ('p1', 30), ('p2', 0), ('p3', 0)").run();
    const insert = old.prepare(
      "INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, state, created_at, expires_at) VALUES (?, ?, ?, 'original', 10, ?, 1, 2)",
    );
    const states = ['Pending', 'Uploading', 'WaitingForProcessing', 'Completed', 'Merged', 'Expired', 'Cancelled'];
    states.forEach((state, i) => insert.run(`u${i}`, 'p1', 'p1', state));
    insert.run('u-other', 'p3', 'p3', 'Completed');
    old.close();
    const db = openSqliteDatabase(file);
    try {
      expect(
        db.prepare('SELECT account_id AS id, open_uploads AS n FROM quota_accounts ORDER BY account_id').all(),
      ).toEqual([
        { id: 'p1', n: 3 },
        { id: 'p2', n: 0 },
        { id: 'p3', n: 0 },
      ]);
    } finally {
      db.close();
    }
  });
});

describe('a backup copy of an older schema', () => {
  it('has no sealed link ids to open before the link-id migration, and none for links still in clear after it', () => {
    const before = join(dir, 'before-link-hash.db');
    openSqliteDatabase(before, { migrationsFolder: migrationsUpTo(migrationIndex('0007_link_id_hash')) }).close();
    const old = SqliteBackupReader.open(before);
    try {
      expect(old.sealedValues('links', 'sealed_id', 'id_hash')).toEqual([]);
    } finally {
      old.close();
    }
    const after = join(dir, 'after-link-hash.db');
    const db = openSqliteDatabase(after);
    const insert = db.prepare(
      "INSERT INTO links (id_hash, sealed_id, owner_id, kind, asset_ids, created_at) VALUES (?, ?, 'o', 'share', '[]', 1)",
    );
    insert.run('clear-id-of-an-earlier-build', null);
    insert.run('ab'.repeat(32), 'v1.iv.sealed');
    db.close();
    const reader = SqliteBackupReader.open(after);
    try {
      expect(reader.sealedValues('links', 'sealed_id', 'id_hash')).toEqual([
        { context: 'ab'.repeat(32), sealed: 'v1.iv.sealed' },
      ]);
    } finally {
      reader.close();
    }
  });

  it("the sync log starts with every live object of each account, in creation order, and each account's head after it", () => {
    const file = join(dir, 'sync.db');
    const old = openSqliteDatabase(file, { migrationsFolder: migrationsUpTo(migrationIndex('0011_sync_changes')) });
    old
      .prepare(
        "INSERT INTO accounts (id, address, address_key, password_hash, created_at) VALUES ('a1', 'a@x.org', 'a@x.org', 'h', 1), ('a2', 'b@x.org', 'b@x.org', 'h', 1)",
      )
      .run();
    old
      .prepare(
        "INSERT INTO albums (id, account_id, protocol_version, created_at) VALUES ('al1', 'a1', '2026-01-01', 10)",
      )
      .run();
    old
      .prepare(
        "INSERT INTO assets (id, owner_id, uploader_id, state, created_at) VALUES ('x1', 'a1', 'a1', 'live', 20), ('x2', 'a1', 'a1', 'trashed', 5), ('x3', 'a1', 'a1', 'pending_drop', 30), ('y1', 'a2', 'a2', 'live', 7)",
      )
      .run();
    old
      .prepare(
        "INSERT INTO links (id_hash, sealed_id, owner_id, kind, asset_ids, created_at, revoked_at) VALUES ('h1', 's', 'a1', 'share', '[]', 40, NULL), ('h2', 's', 'a1', 'share', '[]', 41, 50)",
      )
      .run();
    old.close();
    const db = openSqliteDatabase(file);
    try {
      expect(
        db.prepare('SELECT account_id, kind, object_id, op, seq, at FROM sync_changes ORDER BY account_id, seq').all(),
      ).toEqual([
        { account_id: 'a1', kind: 'asset', object_id: 'x2', op: 'upsert', seq: 1, at: 5 },
        { account_id: 'a1', kind: 'album', object_id: 'al1', op: 'upsert', seq: 2, at: 10 },
        { account_id: 'a1', kind: 'asset', object_id: 'x1', op: 'upsert', seq: 3, at: 20 },
        { account_id: 'a1', kind: 'link', object_id: 'h1', op: 'upsert', seq: 4, at: 40 },
        { account_id: 'a2', kind: 'asset', object_id: 'y1', op: 'upsert', seq: 1, at: 7 },
      ]);
      expect(db.prepare('SELECT account_id, seq, pruned_through FROM sync_heads ORDER BY account_id').all()).toEqual([
        { account_id: 'a1', seq: 4, pruned_through: 0 },
        { account_id: 'a2', seq: 1, pruned_through: 0 },
      ]);
    } finally {
      db.close();
    }
  });
});
