import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real PgBouncer in transaction mode on loopback, in front of the PostgreSQL server of PG_URL,
 * for the tests that must see the server work behind one. Debian's package (`apt-get install
 * pgbouncer`, 1.18 on Debian 12) is what operators run; .ci/run installs it when it can.
 */

/** Where the pgbouncer binary is, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return null;
}

export interface RunningPgBouncer {
  /** `url` with its host and port replaced by the pooler's: the same database, through PgBouncer. */
  through(url: string): string;
  stop(): Promise<void>;
}

/** A port nothing listens on right now (the kernel's choice). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * `sh -c` script: runs its arguments, and ends them when stdin reaches its end (the parent closed
 * it, or died); exits as they do. The watcher reads stdin through fd 3: a job started with `&`
 * reads /dev/null unless told otherwise.
 */
const UNTIL_STDIN_CLOSES =
  'exec 3<&0; "$0" "$@" & b=$!; (cat <&3 >/dev/null; kill "$b" 2>/dev/null) & w=$!; wait "$b"; s=$?; kill "$w" 2>/dev/null; exit "$s"';

/** Resolves once something accepts connections on `port`, or rejects when `child` ends first. */
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`pgbouncer exited (${child.exitCode ?? child.signalCode}): ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts PgBouncer in transaction mode before the server of `serverUrl` (every database name is
 * passed through), with `poolSize` server connections per database and user: fewer than the
 * clients' pools hold, so consecutive transactions of one client connection do land on different
 * server connections. Trust authentication, as the test server's. PgBouncer refuses to run as
 * root; as root it is started with `-u` as the user owning PostgreSQL's files (`postgres`).
 */
export async function startPgBouncer(serverUrl: string, poolSize = 4): Promise<RunningPgBouncer> {
  const binary = pgbouncerBinary();
  if (binary === null) throw new Error('pgbouncer is not installed');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sr-pgbouncer-'));
  chmodSync(dir, 0o755);
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  writeFileSync(users, `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    `${[
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
      'server_lifetime = 3600',
    ].join('\n')}\n`,
    { mode: 0o644 },
  );
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  // Through a shell that ends PgBouncer when its stdin closes: the test process holds the other
  // end, so a test process that exits without `stop` (a worker's pooler shared for the whole run,
  // a process killed) takes its PgBouncer with it instead of leaving it running after the run.
  const child = spawn('/bin/sh', ['-c', UNTIL_STDIN_CLOSES, binary, ...(asRoot ? ['-u', 'postgres'] : []), ini], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  try {
    await listening(port, child, () => log);
  } catch (error) {
    child.stdin?.end();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    through(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const ended = new Promise((r) => child.once('exit', r));
        child.stdin?.end();
        await ended;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
