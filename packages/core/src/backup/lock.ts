/**
 * The maintenance lock: a backup and a GC sweep must not run at once on one blob store. A sweep
 * deletes a blob's ledger row and then its bytes; a backup copies the database first and the blobs
 * after, so a sweep in between would leave the copied ledger naming a blob the copy lacks. Each
 * takes the lock (a file created exclusively beside the blobs) and the other refuses, naming it.
 */

/** Who holds the lock: written into the lock file. */
export interface LockHolder {
  readonly what: string;
  readonly pid: number;
  readonly host: string;
  readonly since: number;
}

export function formatLockHolder(h: LockHolder): string {
  return JSON.stringify({ what: h.what, pid: h.pid, host: h.host, since: h.since });
}

/** The holder a lock file names, or null when its text is not one (a crash mid-write). */
export function parseLockHolder(text: string): LockHolder | null {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (
      typeof v.what !== 'string' ||
      !Number.isInteger(v.pid) ||
      typeof v.host !== 'string' ||
      !Number.isFinite(v.since)
    )
      return null;
    return { what: v.what, pid: v.pid!, host: v.host, since: v.since! };
  } catch {
    return null;
  }
}

/**
 * Whether a lock left behind may be taken over: its holder was on this host and that process is
 * gone (killed mid-backup), or the file names nobody. A holder on another host (a shared data
 * directory) is never presumed dead: the operator removes its lock after checking.
 */
export function lockIsStale(holder: LockHolder | null, here: { host: string; holderAlive: boolean }): boolean {
  if (holder === null) return true;
  return holder.host === here.host && !here.holderAlive;
}

/** Why the lock is refused, naming its holder (the caller names the lock file). */
export function lockRefusal(holder: LockHolder | null): string {
  if (holder === null) return 'held by another process';
  return `a ${holder.what} is running (pid ${holder.pid} on ${holder.host} since ${new Date(holder.since).toISOString()}); try again after it ends, or remove this file if that process is gone`;
}
