import { execFileSync, spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { pgbouncerBinary, pgUrlFromEnv } from './testing.js';

/**
 * The test harness's PgBouncer lives no longer than the process that started it: a test process
 * that ends without stopping it (killed, or a worker that held one for the whole run) leaves no
 * PgBouncer running after the run.
 */
const PG_URL = pgUrlFromEnv();
const reason = !PG_URL ? 'PG_URL is not set' : !pgbouncerBinary() ? 'pgbouncer is not installed' : null;
if (reason) console.warn(`pgbouncer-harness.test.ts: SKIPPED: ${reason}.`);

/** The pids of running PgBouncer processes whose configuration lies in `dir`. */
function bouncersOf(dir: string): string[] {
  try {
    // Anchored: the shell that watches a PgBouncer names it in its own command line too.
    return execFileSync('pgrep', ['-f', `^(/usr/sbin/)?pgbouncer .*${dir}/`], { encoding: 'utf8' })
      .trim()
      .split('\n');
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

describe.skipIf(reason !== null)('the test PgBouncer', () => {
  it('ends when the process that started it is killed without stopping it', async () => {
    const script = `
      import { startPgBouncer } from '@strongroom/adapters-pg/testing';
      const b = await startPgBouncer(${JSON.stringify(PG_URL)}, 1);
      console.log(new URL(b.through('postgres://x@h:1/d')).port);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(
      process.execPath,
      ['--conditions=@strongroom/source', '--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const gone = new Promise((r) => child.once('exit', r));
    let dir: string;
    try {
      const port = await new Promise<string>((resolve, reject) => {
        child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
        child.once('exit', (code) => reject(new Error(`the starter exited (${code}) before its PgBouncer listened`)));
      });
      // The configuration's directory names this PgBouncer among any others running.
      dir = execFileSync('sh', ['-c', `grep -l "listen_port = ${port}$" /tmp/sr-pgbouncer-*/pgbouncer.ini`], {
        encoding: 'utf8',
      })
        .trim()
        .replace(/\/pgbouncer\.ini$/, '');
      expect(bouncersOf(dir)).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
      await gone;
    }
    await expect.poll(() => bouncersOf(dir), { timeout: 10_000 }).toEqual([]);
  }, 30_000);
});
