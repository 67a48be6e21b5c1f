/**
 * Scheduled backups: what each one is called, which to keep, and when the next is due. Names sort
 * in time order, so the newest is the greatest; anything else in the backup directory (an
 * unfinished `.partial-…`, the lock, an operator's own files) is never chosen for deletion.
 */

const PREFIX = 'strongroom-';
const NAME = /^strongroom-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/;

/** The directory name of a backup taken at `at` (UTC, to the millisecond): `strongroom-20261126T031500123Z`. */
export function backupName(at: number): string {
  const iso = new Date(at).toISOString(); // 2026-11-26T03:15:00.123Z
  return PREFIX + iso.replace(/[-:.]/g, '');
}

/** When the backup of that name was taken, or null if the name is not one of ours. */
export function backupTakenAt(name: string): number | null {
  const m = NAME.exec(name);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, ms] = m;
  const at = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), Number(ms));
  return backupName(at) === name ? at : null;
}

/** The finished backups among `names`, newest first. */
export function finishedBackups(names: readonly string[]): { name: string; at: number }[] {
  return names
    .map((name) => ({ name, at: backupTakenAt(name) }))
    .filter((b): b is { name: string; at: number } => b.at !== null)
    .sort((a, b) => b.at - a.at);
}

/** The backups to delete so that the newest `keep` remain (keep is at least 1: never the newest). */
export function backupsToPrune(names: readonly string[], keep: number): string[] {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep at least one backup');
  return finishedBackups(names)
    .slice(keep)
    .map((b) => b.name);
}

/**
 * Whether a scheduled backup is due: none yet, or the newest is at least an interval old. Several
 * processes share one backup directory; whichever looks first after the interval takes it, and the
 * others then see a fresh one and skip (the lock keeps two from running at once).
 */
export function backupDue(names: readonly string[], now: number, intervalMs: number): boolean {
  const newest = finishedBackups(names)[0];
  return newest === undefined || now - newest.at >= intervalMs;
}

/** Seconds since the newest finished backup, or null when there is none. */
export function newestBackupAgeSeconds(names: readonly string[], now: number): number | null {
  const newest = finishedBackups(names)[0];
  return newest === undefined ? null : Math.max(0, (now - newest.at) / 1000);
}
