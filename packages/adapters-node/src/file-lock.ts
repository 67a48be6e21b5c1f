import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { link, readFile, rm, writeFile } from 'node:fs/promises';
import { formatLockHolder, lockIsStale, parseLockHolder, type LockHolder } from '@strongroom/core';
import { lockRefusal } from '@strongroom/core/internal';

/** The lock is held by a live process: the message names it (core's `lockRefusal`). */
export class LockHeldError extends Error {
  override readonly name = 'LockHeldError';
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes an exclusive lock file naming this process (pid, host, what it does). The file appears with
 * its content whole (written aside, then hard-linked into place, which fails if it exists), so a
 * reader never sees it half-written. A lock whose holder on this host is gone (kill -9) is taken
 * over; one held by a live process, or by a process on another host, is refused with LockHeldError.
 */
export async function takeFileLock(path: string, what: string, now: number): Promise<{ release(): Promise<void> }> {
  const me: LockHolder = { what, pid: process.pid, host: hostname(), since: now };
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, formatLockHolder(me), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await link(temp, path);
        return {
          release: async () => {
            // Only our own lock: a lock taken over as stale meanwhile belongs to its new holder.
            const holder = parseLockHolder(await readFile(path, 'utf8').catch(() => ''));
            if (holder?.pid === me.pid && holder.host === me.host && holder.since === me.since)
              await rm(path, { force: true });
          },
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const text = await readFile(path, 'utf8').catch(() => null);
      if (text === null) continue; // released meanwhile: try again
      const holder = parseLockHolder(text);
      if (!lockIsStale(holder, { host: me.host, holderAlive: holder !== null && alive(holder.pid) }))
        throw new LockHeldError(lockRefusal(holder));
      await rm(path, { force: true });
    }
    throw new LockHeldError(lockRefusal(null));
  } finally {
    await rm(temp, { force: true });
  }
}
