import { describe, expect, it } from 'vitest';
import { formatLockHolder, lockIsStale, parseLockHolder } from './lock.js';
import { BACKUP_MAC_LABEL, backupManifestMac, openManifest, sealManifest } from './mac.js';
import { checkManifest, formatManifest, isSafeBackupPath, parseManifest } from './manifest.js';
import { CLOSED_BY_RESTORE, closeRestoredDeployment } from './restore-closes.js';
import { backupDue, backupName, backupsToPrune, backupTakenAt, newestBackupAgeSeconds } from './retention.js';
import { backupHoldsKey, chooseBackupSealing } from './sealing.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

describe('backup manifest', () => {
  it('formats sha256sum lines sorted by path, and parses them back', () => {
    const text = formatManifest([
      { path: 'strongroom.db', sha256: B },
      { path: `blobs/aa/${A}`, sha256: A },
    ]);
    expect(text).toBe(`${A}  blobs/aa/${A}\n${B}  strongroom.db\n`);
    expect(parseManifest(text)).toEqual({
      ok: true,
      entries: [
        { path: `blobs/aa/${A}`, sha256: A },
        { path: 'strongroom.db', sha256: B },
      ],
    });
  });

  it('refuses paths that leave the backup, in either direction', () => {
    for (const p of ['../x', '/etc/passwd', 'a/../../b', 'a//b', './a', 'a\\b', '', 'a\nb'])
      expect(isSafeBackupPath(p), p).toBe(false);
    for (const p of ['secret.key', 'blobs/ab/abc', 'a.b/c..d']) expect(isSafeBackupPath(p), p).toBe(true);
    expect(() => formatManifest([{ path: '../x', sha256: A }])).toThrow(RangeError);
    const parsed = parseManifest(`${A}  ../../etc/shadow\n`);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.problem).toEqual({
        file: 'MANIFEST.sha256',
        cause: 'line 1 names a path outside the backup ("../../etc/shadow")',
      });
  });

  it('names the bad line of a damaged manifest, and an empty one as unfinished', () => {
    const r = parseManifest(`${A}  one\nnot a line\n`);
    expect(r.ok ? null : r.problem.cause).toBe('line 2 is not "<sha256>  <path>"');
    const dup = parseManifest(`${A}  one\n${B}  one\n`);
    expect(dup.ok ? null : dup.problem.cause).toBe('line 2 lists one a second time');
    const empty = parseManifest('');
    expect(empty.ok ? null : empty.problem.cause).toMatch(/empty/);
    expect(() => formatManifest([{ path: 'x', sha256: 'A'.repeat(64) }])).toThrow(/SHA-256/);
  });

  it('checks the files against it: the first missing or changed file, by name', () => {
    const entries = [
      { path: 'a', sha256: A },
      { path: 'b', sha256: B },
    ];
    expect(checkManifest(entries, (p) => ({ a: A, b: B })[p] ?? null)).toBeNull();
    expect(checkManifest(entries, (p) => ({ a: A })[p] ?? null)).toEqual({
      file: 'b',
      cause: 'is listed in the manifest but missing',
    });
    expect(checkManifest(entries, (p) => ({ a: B, b: B })[p] ?? null)?.file).toBe('a');
    expect(checkManifest(entries, (p) => ({ a: B, b: B })[p] ?? null)?.cause).toMatch(
      /^SHA-256 is b+, the manifest says a+/,
    );
  });
});

describe('backup retention', () => {
  const t0 = Date.UTC(2026, 10, 26, 3, 15, 0, 123);
  const hour = 3_600_000;

  it('names sort in time order and read back to the instant; other names are not backups', () => {
    expect(backupName(t0)).toBe('strongroom-20261126T031500123Z');
    expect(backupTakenAt(backupName(t0))).toBe(t0);
    expect(backupName(t0 + 1) > backupName(t0)).toBe(true);
    for (const n of ['.partial-strongroom-20261126T031500123Z', 'strongroom-20261326T031500123Z', 'notes.txt', '.lock'])
      expect(backupTakenAt(n), n).toBeNull();
  });

  it('keeps the newest `keep`, never touches other names, never the newest', () => {
    const names = [0, 3, 1, 2].map((h) => backupName(t0 + h * hour));
    const all = [...names, '.partial-x', 'README'];
    expect(backupsToPrune(all, 2)).toEqual([backupName(t0 + hour), backupName(t0)]);
    expect(backupsToPrune(all, 7)).toEqual([]);
    expect(backupsToPrune(all, 1)).toHaveLength(3);
    expect(() => backupsToPrune(all, 0)).toThrow(RangeError);
  });

  it("is due when none exists or the newest is an interval old; reports the newest one's age", () => {
    expect(backupDue(['README'], t0, hour)).toBe(true);
    expect(newestBackupAgeSeconds(['README'], t0)).toBeNull();
    const names = [backupName(t0), backupName(t0 - 5 * hour)];
    expect(backupDue(names, t0 + hour - 1, hour)).toBe(false);
    expect(backupDue(names, t0 + hour, hour)).toBe(true);
    expect(newestBackupAgeSeconds(names, t0 + 90_000)).toBe(90);
  });
});

describe('maintenance lock', () => {
  const holder = { what: 'backup', pid: 4242, host: 'box', since: 1_000 };
  it('round-trips its holder; a garbled file names nobody', () => {
    expect(parseLockHolder(formatLockHolder(holder))).toEqual(holder);
    expect(parseLockHolder('{"what":"backup"')).toBeNull();
    expect(parseLockHolder('{"what":"backup","pid":"1","host":"b","since":1}')).toBeNull();
  });
  it('is taken over only when its holder on this host is gone', () => {
    expect(lockIsStale(holder, { host: 'box', holderAlive: true })).toBe(false);
    expect(lockIsStale(holder, { host: 'box', holderAlive: false })).toBe(true);
    expect(lockIsStale(holder, { host: 'other', holderAlive: false })).toBe(false);
    expect(lockIsStale(null, { host: 'box', holderAlive: false })).toBe(true);
  });
});

describe('the manifest MAC', () => {
  const key = new Uint8Array(32).fill(7);
  const body = `${A}  backup.json\n${B}  strongroom.db.age\n`;

  it('a sealed manifest opens under its key, and is still a sha256sum file (the MAC line is a comment)', () => {
    const sealed = sealManifest(key, body);
    expect(sealed.startsWith(body)).toBe(true);
    expect(sealed.slice(body.length)).toMatch(/^# strongroom-backup-mac\/v1 [0-9a-f]{64}\n$/);
    expect(openManifest(key, sealed)).toEqual({ ok: true, body });
    // Keyed by HKDF under its own label: not the key fingerprint, not a plain HMAC of the body under the key.
    expect(backupManifestMac(key, body)).not.toBe(backupManifestMac(new Uint8Array(32).fill(8), body));
    expect(BACKUP_MAC_LABEL).toBe('strongroom/backup-manifest-mac/v1');
  });

  it('refuses an edited body, a recomputed SHA-256 line, another key, a missing or damaged MAC line', () => {
    const sealed = sealManifest(key, body);
    const edited = sealed.replace(B, 'c'.repeat(64));
    for (const [text, k, cause] of [
      [edited, key, /MAC does not verify/],
      [sealed, new Uint8Array(32).fill(9), /MAC does not verify/],
      [body, key, /carries no MAC line/],
      [sealed.replace(/[0-9a-f]\n$/, 'x\n'), key, /carries no MAC line/],
      [`${sealed}\n`, key, /carries no MAC line/],
      [`${body}${sealed.slice(body.length)}${A}  extra\n`, key, /carries no MAC line/],
    ] as const) {
      const r = openManifest(k, text);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.problem.cause).toMatch(cause);
    }
  });
});

describe('what a restore closes', () => {
  const clock = { now: () => 42_000 };
  const closed = { sessions: 3, secondFactorChallenges: 1, revokeAllChallenges: 0, oidcLoginCodes: 2, oidcFlows: 1 };

  it("closes everything at the clock's time, and voids every sign-in ticket", async () => {
    const calls: number[] = [];
    const stores = {
      deployment: { closeEverythingForRestore: async (at: number) => (calls.push(at), closed) },
      signIn: { voidAllSignInTickets: async () => (calls.push(-1), 5) },
    };
    expect(await closeRestoredDeployment(stores, clock, { keepSessions: false })).toEqual({
      at: 42_000,
      ...closed,
      signInTickets: 5,
    });
    expect(calls).toEqual([42_000, -1]);
    expect(CLOSED_BY_RESTORE).toEqual([
      'session',
      'second_factor_challenge',
      'revoke_all_challenge',
      'oidc_login_code',
      'oidc_flow',
      'sign_in_ticket',
    ]);
  });

  it('--keep-sessions closes nothing and touches no store', async () => {
    const never = async (): Promise<never> => {
      throw new Error('must not be called');
    };
    const stores = { deployment: { closeEverythingForRestore: never }, signIn: { voidAllSignInTickets: never } };
    expect(await closeRestoredDeployment(stores, clock, { keepSessions: true })).toEqual({
      at: null,
      sessions: 0,
      secondFactorChallenges: 0,
      revokeAllChallenges: 0,
      oidcLoginCodes: 0,
      oidcFlows: 0,
      signInTickets: 0,
    });
  });
});

describe('how a backup is sealed', () => {
  it('to recipients or to a passphrase; nothing configured is refused, naming the recipients setting; unencrypted only when asked', () => {
    expect(chooseBackupSealing({ recipients: 2, passphrase: false, unencrypted: false })).toEqual({
      ok: true,
      sealing: 'recipients',
    });
    expect(chooseBackupSealing({ recipients: 0, passphrase: true, unencrypted: false })).toEqual({
      ok: true,
      sealing: 'passphrase',
    });
    expect(chooseBackupSealing({ recipients: 0, passphrase: false, unencrypted: true })).toEqual({
      ok: true,
      sealing: 'none',
    });
    expect(chooseBackupSealing({ recipients: 0, passphrase: false, unencrypted: false })).toEqual({
      ok: false,
      problem: { setting: 'recipients', cause: 'missing' },
    });
    expect(chooseBackupSealing({ recipients: 1, passphrase: true, unencrypted: false })).toEqual({
      ok: false,
      problem: { setting: 'passphrase', cause: 'recipients_and_passphrase' },
    });
    for (const s of [
      { recipients: 1, passphrase: false },
      { recipients: 0, passphrase: true },
    ]) {
      expect(chooseBackupSealing({ ...s, unencrypted: true })).toEqual({
        ok: false,
        problem: { setting: 'unencrypted', cause: 'contradicts_unencrypted' },
      });
    }
  });

  it("the key goes in only encrypted, and only the data directory's file", () => {
    expect(backupHoldsKey({ keyFromDataDir: true, sealing: 'recipients' })).toBe(true);
    expect(backupHoldsKey({ keyFromDataDir: true, sealing: 'passphrase' })).toBe(true);
    expect(backupHoldsKey({ keyFromDataDir: true, sealing: 'none' })).toBe(false);
    expect(backupHoldsKey({ keyFromDataDir: false, sealing: 'recipients' })).toBe(false);
  });
});
