import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway PostgreSQL cluster of the test's own (initdb + pg_ctl from /usr/lib/postgresql/N/bin),
 * on a free loopback port, so the test may restart it. initdb refuses to run as root: as root, the
 * cluster is made and run as the `postgres` system user.
 */
export interface PgCluster {
  readonly url: string;
  /**
   * `pg_ctl restart`: every connection is dropped and the server comes back on the same port.
   * `fast` shuts down cleanly; `immediate` is a crash (no checkpoint), recovered from the WAL.
   */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  stop(): void;
}

/** The newest installed server's bin directory, or null. */
function pgBin(): string | null {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], 'bin') : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Why a cluster cannot be made here, or null when it can. */
export function pgClusterUnavailable(): string | null {
  if (pgBin() === null) return 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin';
  if (userInfo().uid === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'pipe' });
    } catch {
      return 'running as root and there is no postgres user to run initdb as';
    }
  }
  return null;
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBin()!;
  const dir = mkdtempSync(join(tmpdir(), 'sr-pgcluster-'));
  const data = join(dir, 'data');
  const root = userInfo().uid === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const command = (tool: string, args: string[]) =>
    root ? ['runuser', '-u', 'postgres', '--', join(bin, tool), ...args] : [join(bin, tool), ...args];
  const run = (tool: string, args: string[]) => {
    const cmd = command(tool, args);
    return execFileSync(cmd[0]!, cmd.slice(1), { stdio: 'pipe', cwd: dir }).toString();
  };
  // Asynchronous, so the caller's load keeps running while the server goes down and comes back.
  const runAsync = async (tool: string, args: string[]) => {
    const cmd = command(tool, args);
    await promisify(execFile)(cmd[0]!, cmd.slice(1), { cwd: dir });
  };
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=60`;
  const log = join(dir, 'server.log');
  run('pg_ctl', ['-D', data, '-l', log, '-o', options, '-w', '-t', '30', 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: (mode = 'fast') =>
      runAsync('pg_ctl', ['-D', data, '-l', log, '-o', options, '-m', mode, '-w', '-t', '30', 'restart']),
    stop: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
