import { describe, expect, it } from 'vitest';
import {
  backupDue,
  backupName,
  backupsToPrune,
  backupTakenAt,
  checkManifest,
  formatManifest,
  isSafeBackupPath,
  lockIsStale,
  newestBackupAgeSeconds,
  parseLockHolder,
  formatLockHolder,
  parseManifest,
} from './index.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

describe('backup manifest', () => {
  it('formats sha256sum lines sorted by path, and parses them back', () => {
    const text = formatManifest([
      { path: 'strongroom.db', sha256: B },
      { path: 'blobs/aa/' + A, sha256: A },
    ]);
    expect(text).toBe(`${A}  blobs/aa/${A}\n${B}  strongroom.db\n`);
    expect(parseManifest(text)).toEqual({ ok: true, entries: [{ path: `blobs/aa/${A}`, sha256: A }, { path: 'strongroom.db', sha256: B }] });
  });

  it('refuses paths that leave the backup, in either direction', () => {
    for (const p of ['../x', '/etc/passwd', 'a/../../b', 'a//b', './a', 'a\\b', '', 'a\nb']) expect(isSafeBackupPath(p), p).toBe(false);
    for (const p of ['secret.key', 'blobs/ab/abc', 'a.b/c..d']) expect(isSafeBackupPath(p), p).toBe(true);
    expect(() => formatManifest([{ path: '../x', sha256: A }])).toThrow(RangeError);
    const parsed = parseManifest(`${A}  ../../etc/shadow\n`);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toEqual({ file: 'MANIFEST.sha256', cause: 'line 1 names a path outside the backup ("../../etc/shadow")' });
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
    expect(checkManifest(entries, (p) => ({ a: A })[p] ?? null)).toEqual({ file: 'b', cause: 'is listed in the manifest but missing' });
    expect(checkManifest(entries, (p) => ({ a: B, b: B })[p] ?? null)?.file).toBe('a');
    expect(checkManifest(entries, (p) => ({ a: B, b: B })[p] ?? null)?.cause).toMatch(/^SHA-256 is b+, the manifest says a+/);
  });
});

describe('backup retention', () => {
  const t0 = Date.UTC(2026, 10, 26, 3, 15, 0, 123);
  const hour = 3_600_000;

  it('names sort in time order and read back to the instant; other names are not backups', () => {
    expect(backupName(t0)).toBe('strongroom-20261126T031500123Z');
    expect(backupTakenAt(backupName(t0))).toBe(t0);
    expect(backupName(t0 + 1) > backupName(t0)).toBe(true);
    for (const n of ['.partial-strongroom-20261126T031500123Z', 'strongroom-20261326T031500123Z', 'notes.txt', '.lock']) expect(backupTakenAt(n), n).toBeNull();
  });

  it('keeps the newest `keep`, never touches other names, never the newest', () => {
    const names = [0, 3, 1, 2].map((h) => backupName(t0 + h * hour));
    const all = [...names, '.partial-x', 'README'];
    expect(backupsToPrune(all, 2)).toEqual([backupName(t0 + hour), backupName(t0)]);
    expect(backupsToPrune(all, 7)).toEqual([]);
    expect(backupsToPrune(all, 1)).toHaveLength(3);
    expect(() => backupsToPrune(all, 0)).toThrow(RangeError);
  });

  it('is due when none exists or the newest is an interval old; reports the newest one\'s age', () => {
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
