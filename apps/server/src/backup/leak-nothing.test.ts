import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Decrypter, Encrypter, identityToRecipient } from 'age-encryption';
import { fromBase64url, toBase64url, type AccountRecord, type SessionRecord } from '@strongroom/core';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { ConfigError, readConfig } from '../config.js';
import { newIdentity } from './age.js';
import { SEALED_COLUMNS } from './sealed.js';

/**
 * Backups that leak nothing. Whoever copies a backup folder must not be able to forge a token (open
 * the sealed signing key with what the folder holds), nor change a backup so that verify-backup and
 * restore accept it: a backup is age-encrypted to its operator, or, when asked for unencrypted,
 * holds no key at all; its manifest carries a MAC under the server key.
 */
const work = mkdtempSync(join(tmpdir(), 'sr-backup-leak-'));
const dataDir = join(work, 'data');
const env = { SVC_DATA_DIR: dataDir, SVC_BASE_URL: 'http://127.0.0.1:8080' };
const identityFile = join(work, 'identity.txt');
const otherIdentityFile = join(work, 'other-identity.txt');
const passphraseFile = join(work, 'passphrase.txt');
const wrongPassphraseFile = join(work, 'wrong-passphrase.txt');
let recipient = '';
const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

/** Every regular file under a directory, by path relative to it. */
function files(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(join(e.parentPath, e.name).slice(dir.length + 1), readFileSync(join(e.parentPath, e.name)));
  }
  return out;
}

/** The sealed signing keys of a database: what a forger needs to open. */
function sealedSigningKeys(dbFile: string): { kid: string; sealed: string }[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return db.prepare('SELECT kid, private_key AS sealed FROM signing_keys').all() as { kid: string; sealed: string }[];
  } finally {
    db.close();
  }
}

const signing = SEALED_COLUMNS.find((c) => c.table === 'signing_keys')!;
async function opensAnySigningKey(key: Uint8Array, keys: { kid: string; sealed: string }[]): Promise<boolean> {
  const open = signing.opener(key);
  for (const k of keys) if (await open(k.sealed, k.kid)) return true;
  return false;
}

/**
 * Every 32-byte key a folder's files could be read as: each file whole, and each of its lines, as
 * base64url, base64, hex, or raw bytes.
 */
function keyCandidates(folder: Map<string, Buffer>): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const bytes of folder.values()) {
    if (bytes.length === 32) out.push(new Uint8Array(bytes));
    for (const piece of [bytes.toString('utf8'), ...bytes.toString('utf8').split(/\s+/)]) {
      const t = piece.trim();
      for (const k of [
        fromBase64url(t),
        /^[0-9a-f]{64}$/i.test(t) ? new Uint8Array(Buffer.from(t, 'hex')) : null,
        new Uint8Array(Buffer.from(t, 'base64')),
      ]) {
        if (k !== null && k.length === 32) out.push(k);
      }
    }
  }
  return out;
}

let liveKey: Uint8Array;
let liveSigningKeys: { kid: string; sealed: string }[];

describe('backups that leak nothing', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    expect((await runCli(['init'], env)).code).toBe(0);
    liveKey = fromBase64url(readFileSync(join(dataDir, 'secret.key'), 'utf8').trim())!;
    liveSigningKeys = sealedSigningKeys(join(dataDir, 'strongroom.db'));
    // The reproduction works against the live data: the key opens them (so failing below means something).
    expect(liveSigningKeys.length).toBeGreaterThan(0);
    expect(await opensAnySigningKey(liveKey, liveSigningKeys)).toBe(true);
    const id = await newIdentity(new Date());
    writeFileSync(identityFile, id.identityFile, { mode: 0o600 });
    recipient = id.recipient;
    writeFileSync(otherIdentityFile, (await newIdentity(new Date())).identityFile, { mode: 0o600 });
    writeFileSync(passphraseFile, 'correct horse battery staple\n', { mode: 0o600 });
    writeFileSync(wrongPassphraseFile, 'incorrect horse\n', { mode: 0o600 });
  }, 60_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('a backup without a recipient, a passphrase or --unencrypted is refused, naming the setting, and writes nothing', async () => {
    const target = join(work, 'default');
    const r = await runCli(['backup', target], env);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /^error: SVC_BACKUP_RECIPIENTS: is not set: a backup is encrypted to its operator\. Give --recipient age1…/,
    );
    expect(r.out).toContain('--unencrypted (SVC_BACKUP_UNENCRYPTED=1)');
    expect(existsSync(target)).toBe(false);
    // Contradictions and bad recipients are refused too, before anything is written.
    expect(
      (await runCli(['backup', '--recipient', recipient, '--passphrase-file', passphraseFile, target], env)).out,
    ).toMatch(/^error: --passphrase-file: excludes --recipient/);
    expect((await runCli(['backup', '--unencrypted', '--recipient', recipient, target], env)).out).toMatch(
      /^error: --unencrypted: contradicts --recipient/,
    );
    expect(
      (
        await runCli(
          ['backup', '--recipient', recipient.slice(0, -1) + (recipient.endsWith('q') ? 'p' : 'q'), target],
          env,
        )
      ).out,
    ).toMatch(/^error: --recipient: "age1.*" is not an age X25519 recipient/);
    expect(existsSync(target)).toBe(false);
  });

  it('scheduled backups are refused at start without encryption, naming the setting; the settings are validated', () => {
    const schedule = { SVC_BACKUP_DIR: join(work, 'scheduled'), SVC_BACKUP_INTERVAL_S: '3600' };
    expect(() => readConfig({ ...env, ...schedule })).toThrow(
      new ConfigError(
        'SVC_BACKUP_RECIPIENTS is not set: scheduled backups (SVC_BACKUP_DIR) are encrypted to the operator; set it (age1…), or SVC_BACKUP_PASSPHRASE_FILE, or SVC_BACKUP_UNENCRYPTED=1 for backups without the secret key',
      ),
    );
    expect(
      readConfig({ ...env, ...schedule, SVC_BACKUP_RECIPIENTS: ` ${recipient} , ${recipient}` }).backupEncryption
        .recipients,
    ).toEqual([recipient, recipient]);
    expect(readConfig({ ...env, ...schedule, SVC_BACKUP_UNENCRYPTED: '1' }).backupEncryption.unencrypted).toBe(true);
    expect(() => readConfig({ ...env, SVC_BACKUP_RECIPIENTS: 'age1nope' })).toThrow(
      /^SVC_BACKUP_RECIPIENTS must list age X25519 recipients/,
    );
    expect(() => readConfig({ ...env, SVC_BACKUP_UNENCRYPTED: 'yes' })).toThrow(
      'SVC_BACKUP_UNENCRYPTED must be 1 or 0, got "yes"',
    );
    expect(() =>
      readConfig({ ...env, SVC_BACKUP_RECIPIENTS: recipient, SVC_BACKUP_PASSPHRASE_FILE: passphraseFile }),
    ).toThrow(/exclude each other/);
    expect(() => readConfig({ ...env, SVC_BACKUP_RECIPIENTS: recipient, SVC_BACKUP_UNENCRYPTED: '1' })).toThrow(
      /contradicts/,
    );
  });

  const kinds: [string, () => string[]][] = [
    ['to an X25519 recipient', () => ['--recipient', recipient]],
    ['to a passphrase', () => ['--passphrase-file', passphraseFile]],
    ['unencrypted', () => ['--unencrypted']],
  ];
  for (const [kind, flags] of kinds) {
    it(`a copied folder, ${kind}, holds nothing that opens the sealed signing key: no token can be forged from it`, async () => {
      const target = join(work, `copy-${kind.replace(/\W+/g, '-')}`);
      const r = await runCli(['backup', ...flags(), target], env);
      expect(r.code, r.out).toBe(0);
      const folder = files(target);
      // The key in none of its encodings, in no file.
      for (const [name, bytes] of folder) {
        for (const form of [
          Buffer.from(liveKey),
          Buffer.from(toBase64url(liveKey)),
          Buffer.from(Buffer.from(liveKey).toString('hex')),
          Buffer.from(Buffer.from(liveKey).toString('base64')),
        ]) {
          expect(bytes.includes(form), `${name} holds the key`).toBe(false);
        }
      }
      // Every key the folder could be read as, against the sealed signing keys.
      const candidates = keyCandidates(folder);
      expect(candidates.length).toBeGreaterThan(0);
      for (const k of candidates) expect(await opensAnySigningKey(k, liveSigningKeys)).toBe(false);
      if (kind === 'unencrypted') {
        // The database copy is readable there, and its signing keys are sealed.
        expect([...folder.keys()].sort()).toEqual(['MANIFEST.sha256', 'backup.json', 'strongroom.db']);
        expect(
          sealedSigningKeys(join(target, 'strongroom.db'))
            .map((k) => k.kid)
            .sort(),
        ).toEqual(liveSigningKeys.map((k) => k.kid).sort());
      } else {
        // Nothing readable but the description: the database, the key and the manifest are age files.
        expect([...folder.keys()].sort()).toEqual([
          'MANIFEST.sha256.age',
          'backup.json',
          'secret.key.age',
          'strongroom.db.age',
        ]);
        for (const name of ['MANIFEST.sha256.age', 'secret.key.age', 'strongroom.db.age'])
          expect(folder.get(name)!.subarray(0, 21).toString()).toBe('age-encryption.org/v1');
      }
      for (const mode of [...readdirSync(target).map((n) => statSync(join(target, n)).mode), statSync(target).mode])
        expect(mode & 0o077).toBe(0);
    });
  }

  it('an unencrypted backup restores with --key-file (or SVC_SECRET_KEY), and is refused without a key, naming both', async () => {
    const backup = join(work, 'copy-unencrypted');
    const none = await runCli(['restore', backup], { ...env, SVC_DATA_DIR: join(work, 'r-none') });
    expect(none.out).toBe(
      `error: ${join(backup, 'secret.key.age')}: is not in this backup (an unencrypted backup never holds the key): give --key-file <the data directory's secret.key>, or set SVC_SECRET_KEY to the key`,
    );
    expect(existsSync(join(work, 'r-none'))).toBe(false);
    const keyFile = join(work, 'kept-key');
    cpSync(join(dataDir, 'secret.key'), keyFile);
    const r = await runCli(['restore', '--key-file', keyFile, backup], { ...env, SVC_DATA_DIR: join(work, 'r-key') });
    expect(r.code, r.out).toBe(0);
    expect(readFileSync(join(work, 'r-key', 'secret.key'), 'utf8').trim()).toBe(toBase64url(liveKey));
    const fromEnv = await runCli(['restore', backup], {
      ...env,
      SVC_DATA_DIR: join(work, 'r-env'),
      SVC_SECRET_KEY: toBase64url(liveKey),
    });
    expect(fromEnv.code, fromEnv.out).toBe(0);
    expect(readdirSync(join(work, 'r-env'))).not.toContain('secret.key');
    // Another key is named as not the backup's.
    writeFileSync(join(work, 'other-key'), `${toBase64url(new Uint8Array(32).fill(3))}\n`);
    expect((await runCli(['verify-backup', '--key-file', join(work, 'other-key'), backup], env)).out).toMatch(
      new RegExp(`^error: ${join(work, 'other-key')}: is not the key this backup was taken with`),
    );
  });

  it('a wrong identity, a wrong passphrase, or none, fail naming the cause', async () => {
    const toRecipient = join(work, 'copy-to-an-X25519-recipient');
    const toPassphrase = join(work, 'copy-to-a-passphrase');
    const manifest = (dir: string) => join(dir, 'MANIFEST.sha256.age');
    expect((await runCli(['verify-backup', toRecipient], env)).out).toBe(
      `error: ${manifest(toRecipient)}: is encrypted: give --identity-file <age identity file> (or SVC_BACKUP_IDENTITY_FILE), or --passphrase-file <file>`,
    );
    expect((await runCli(['verify-backup', '--identity-file', otherIdentityFile, toRecipient], env)).out).toBe(
      `error: ${manifest(toRecipient)}: does not decrypt with the identity in ${otherIdentityFile}: wrong identity (it is none of the recipients this backup was encrypted to)`,
    );
    expect((await runCli(['verify-backup', '--passphrase-file', wrongPassphraseFile, toPassphrase], env)).out).toBe(
      `error: ${manifest(toPassphrase)}: does not decrypt with the passphrase in ${wrongPassphraseFile}: wrong passphrase`,
    );
    expect((await runCli(['verify-backup', '--identity-file', passphraseFile, toRecipient], env)).out).toBe(
      `error: ${passphraseFile}: (--identity-file) holds a line that is not an age identity (AGE-SECRET-KEY-1…)`,
    );
    const target = join(work, 'r-wrong');
    expect(
      (await runCli(['restore', '--identity-file', otherIdentityFile, toRecipient], { ...env, SVC_DATA_DIR: target }))
        .code,
    ).toBe(1);
    expect(existsSync(target)).toBe(false);
    // The right ones open them, the identity also through SVC_BACKUP_IDENTITY_FILE.
    expect(
      (await runCli(['verify-backup', toRecipient], { ...env, SVC_BACKUP_IDENTITY_FILE: identityFile })).out,
    ).toMatch(/^backup .* verified \(taken .*, encryption age-x25519\): manifest MAC verifies under secret\.key\.age/);
    expect((await runCli(['verify-backup', '--passphrase-file', passphraseFile, toPassphrase], env)).code).toBe(0);
  });

  it("a whole other deployment's backup, encrypted to the (public) recipient, is refused when the operator gives the key it must have", async () => {
    // The attacker needs only the recipient: their own deployment, backed up to it, verifies on its own key.
    const theirs = join(work, 'attacker-data');
    const forged = join(work, 'forged');
    expect((await runCli(['init'], { ...env, SVC_DATA_DIR: theirs })).code).toBe(0);
    expect((await runCli(['backup', '--recipient', recipient, forged], { ...env, SVC_DATA_DIR: theirs })).code).toBe(0);
    const keyFile = join(work, 'operator-key');
    writeFileSync(keyFile, `${toBase64url(liveKey)}\n`, { mode: 0o600 });
    const target = join(work, 'r-forged');
    const r = await runCli(['restore', '--identity-file', identityFile, '--key-file', keyFile, forged], {
      ...env,
      SVC_DATA_DIR: target,
    });
    expect(r).toEqual({
      code: 1,
      out: `error: ${keyFile}: is not the key this backup was taken with (nothing was changed)`,
    });
    const e = await runCli(['restore', '--identity-file', identityFile, forged], {
      ...env,
      SVC_DATA_DIR: target,
      SVC_SECRET_KEY: toBase64url(liveKey),
    });
    expect(e.out).toMatch(/^error: SVC_SECRET_KEY: is not the key this backup was taken with/);
    expect(existsSync(target)).toBe(false);
  });

  it('backup-keygen writes a new identity file (0600, never over another) and prints its recipient, which backups encrypt to', async () => {
    const file = join(work, 'keygen-identity.txt');
    const r = await runCli(['backup-keygen', file], env);
    expect(r.code, r.out).toBe(0);
    expect(statSync(file).mode & 0o077).toBe(0);
    const secret = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('AGE-SECRET-KEY-1'))!;
    const printed = /^recipient: (age1\S+)$/m.exec(r.out)?.[1];
    expect(printed).toBe(await identityToRecipient(secret));
    expect(readFileSync(file, 'utf8')).toContain(`# public key: ${printed}`);
    const again = await runCli(['backup-keygen', file], env);
    expect(again.code).toBe(1);
    expect(readFileSync(file, 'utf8')).toContain(secret);
    const target = join(work, 'to-keygen');
    expect((await runCli(['backup', '--recipient', printed!, target], env)).code).toBe(0);
    expect((await runCli(['verify-backup', '--identity-file', file, target], env)).code).toBe(0);
  });

  it('a backup of an earlier build (format 1: no MAC, the key in the clear) is refused, saying so', async () => {
    const dir = join(work, 'format-1');
    cpSync(join(work, 'copy-unencrypted'), dir, { recursive: true });
    const info = JSON.parse(readFileSync(join(dir, 'backup.json'), 'utf8'));
    writeFileSync(join(dir, 'backup.json'), JSON.stringify({ ...info, format: 1 }));
    expect((await runCli(['verify-backup', dir], { ...env, SVC_SECRET_KEY: toBase64url(liveKey) })).out).toBe(
      `error: ${join(dir, 'backup.json')}: has format 1: a backup of an older build, whose manifest carries no MAC and whose folder may hold the key in the clear; this build reads format 2 (take a new backup, then destroy that one)`,
    );
  });

  it('a restore voids every sign-in ticket and closes every session as backed up; --keep-sessions keeps both', async () => {
    const live = join(work, 'ticket-data');
    const liveEnv = { ...env, SVC_DATA_DIR: live };
    expect((await runCli(['init'], liveEnv)).code).toBe(0);
    const ticketHash = sha('a ticket');
    const sessionId = '0190fffe-0000-7000-8000-000000000002';
    const db = openSqliteDatabase(join(live, 'strongroom.db'), { create: false });
    try {
      const ports = createSqlitePorts(db);
      const account: AccountRecord = {
        id: '0190fffe-0000-7000-8000-000000000001',
        address: 'ticket@example.org',
        addressKey: 'ticket@example.org',
        passwordHash: 'x',
        displayName: null,
        createdAt: 1,
        lockedAt: null,
        credentialsChangedAt: null,
      };
      await ports.accounts.createAccount(account);
      const now = Date.now();
      expect(
        await ports.accounts.openSession(
          {
            id: sessionId,
            accountId: account.id,
            tokenHash: sha('a session'),
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
      await ports.signIn.issueSignInTicket({
        ticketHash,
        accountId: account.id,
        issuedAt: now,
        expiresAt: now + 3_600_000,
        credentialsAt: null,
        wrongPasswords: 0,
      });
    } finally {
      db.close();
    }
    const backup = join(work, 'ticket-backup');
    expect((await runCli(['backup', '--recipient', recipient, backup], liveEnv)).code).toBe(0);
    const restoredFacts = async (dir: string) => {
      const rdb = openSqliteDatabase(join(dir, 'strongroom.db'), { create: false });
      try {
        const ports = createSqlitePorts(rdb);
        return {
          ticket: await ports.signIn.findSignInTicket(ticketHash),
          closedAt: (await ports.accounts.findSessionById(sessionId))?.closedAt ?? null,
        };
      } finally {
        rdb.close();
      }
    };
    const r = await runCli(['restore', '--identity-file', identityFile, backup], {
      ...env,
      SVC_DATA_DIR: join(work, 'ticket-restored'),
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(
      /^closed what was open at the backup \(.+\): 1 sessions, 0 second-factor challenges, 0 revoke-all challenges, 0 OpenID login codes, 0 OpenID flows, 1 sign-in tickets; everyone signs in again$/m,
    );
    const closed = await restoredFacts(join(work, 'ticket-restored'));
    expect(closed.ticket).toBeNull();
    expect(closed.closedAt).not.toBeNull();
    const kept = await runCli(['restore', '--keep-sessions', '--identity-file', identityFile, backup], {
      ...env,
      SVC_DATA_DIR: join(work, 'ticket-kept'),
    });
    expect(kept.code, kept.out).toBe(0);
    const open = await restoredFacts(join(work, 'ticket-kept'));
    expect(open.ticket?.ticketHash).toBe(ticketHash);
    expect(open.closedAt).toBeNull();
  });

  /** Plants an account and an open session in a SQLite file, as a tamperer with a copy would. */
  async function plantSession(dbFile: string): Promise<void> {
    const db = openSqliteDatabase(dbFile, { create: false });
    try {
      const ports = createSqlitePorts(db);
      const account: AccountRecord = {
        id: '0190ffff-0000-7000-8000-000000000001',
        address: 'planted@example.org',
        addressKey: 'planted@example.org',
        passwordHash: 'x',
        displayName: null,
        createdAt: 1,
        lockedAt: null,
        credentialsChangedAt: null,
      };
      await ports.accounts.createAccount(account);
      const session: SessionRecord = {
        id: '0190ffff-0000-7000-8000-000000000002',
        accountId: account.id,
        tokenHash: sha('planted token'),
        cohortHash: null,
        createdAt: Date.now(),
        refreshedAt: Date.now(),
        lastUsedAt: Date.now(),
        accessFloor: 0,
        closedAt: null,
        authenticatedAt: Date.now(),
        method: 'password',
      };
      expect(await ports.accounts.openSession(session, null)).toBe(true);
    } finally {
      db.close();
    }
  }

  /** The manifest recomputed over the folder's files as they now are, as `sha256sum` would write it. */
  function recomputedManifest(dir: string, keepMacLine: string | null): string {
    const lines = [...files(dir)]
      .filter(([name]) => !name.startsWith('MANIFEST.sha256'))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, bytes]) => `${sha(bytes)}  ${name}\n`);
    return lines.join('') + (keepMacLine ?? '');
  }

  it('a decrypted copy with a planted session and a recomputed SHA-256 manifest fails verify-backup and restore: its MAC does not verify', async () => {
    const original = join(work, 'copy-to-an-X25519-recipient');
    const dir = join(work, 'tampered-encrypted');
    cpSync(original, dir, { recursive: true });
    const d = new Decrypter();
    d.addIdentity(
      readFileSync(identityFile, 'utf8')
        .split('\n')
        .find((l) => l.startsWith('AGE-SECRET-KEY-'))!,
    );
    // Decrypt the database, plant, encrypt it again to the (public) recipient.
    const plain = join(work, 'tampered.db');
    writeFileSync(plain, await d.decrypt(new Uint8Array(readFileSync(join(dir, 'strongroom.db.age')))));
    await plantSession(plain);
    const e = new Encrypter();
    e.addRecipient(recipient);
    writeFileSync(join(dir, 'strongroom.db.age'), await e.encrypt(new Uint8Array(readFileSync(plain))));
    // The manifest: recomputed, its old MAC line kept (the tamperer cannot compute a new one), encrypted again.
    const oldManifest = await d.decrypt(new Uint8Array(readFileSync(join(dir, 'MANIFEST.sha256.age'))), 'text');
    const macLine = oldManifest.slice(oldManifest.lastIndexOf('# strongroom-backup-mac/v1 '));
    writeFileSync(join(dir, 'MANIFEST.sha256.age'), await e.encrypt(recomputedManifest(dir, macLine)));
    const expected = `error: ${join(dir, 'MANIFEST.sha256.age')}: MAC does not verify under the deployment's secret key: the backup was changed after it was taken, or it is another deployment's`;
    const v = await runCli(['verify-backup', '--identity-file', identityFile, dir], env);
    expect(v).toEqual({ code: 1, out: expected });
    const target = join(work, 'r-tampered');
    expect(await runCli(['restore', '--identity-file', identityFile, dir], { ...env, SVC_DATA_DIR: target })).toEqual({
      code: 1,
      out: expected,
    });
    expect(existsSync(target)).toBe(false);
    // Without the MAC line at all: refused as carrying none.
    writeFileSync(join(dir, 'MANIFEST.sha256.age'), await e.encrypt(recomputedManifest(dir, null)));
    expect((await runCli(['verify-backup', '--identity-file', identityFile, dir], env)).out).toMatch(
      /MANIFEST\.sha256\.age: carries no MAC line/,
    );
    // The untouched backup verifies, so it was the planting that was refused.
    expect((await runCli(['verify-backup', '--identity-file', identityFile, original], env)).code).toBe(0);
  });

  it('an unencrypted copy with a planted session and a recomputed SHA-256 manifest is refused the same way', async () => {
    const dir = join(work, 'tampered-plain');
    cpSync(join(work, 'copy-unencrypted'), dir, { recursive: true });
    await plantSession(join(dir, 'strongroom.db'));
    const old = readFileSync(join(dir, 'MANIFEST.sha256'), 'utf8');
    writeFileSync(
      join(dir, 'MANIFEST.sha256'),
      recomputedManifest(dir, old.slice(old.lastIndexOf('# strongroom-backup-mac/v1 '))),
    );
    const withKey = { ...env, SVC_SECRET_KEY: toBase64url(liveKey) };
    const expected = `error: ${join(dir, 'MANIFEST.sha256')}: MAC does not verify under the deployment's secret key: the backup was changed after it was taken, or it is another deployment's`;
    expect(await runCli(['verify-backup', dir], withKey)).toEqual({ code: 1, out: expected });
    expect(await runCli(['restore', dir], { ...withKey, SVC_DATA_DIR: join(work, 'r-plain-tampered') })).toEqual({
      code: 1,
      out: expected,
    });
    expect(existsSync(join(work, 'r-plain-tampered'))).toBe(false);
  });
});
