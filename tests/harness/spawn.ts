import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startPgBouncer, type RunningPgBouncer } from '@strongroom/adapters-pg/testing';

/**
 * The one way a test starts a real Strongroom process: the server (`apps/server/src/main.ts`)
 * waited for until its `server.listening` log line (it listens on PORT=0, so any number run beside
 * other people's tests), or the operator CLI run to its end.
 *
 * The processes run the server's source bundled by esbuild into one file (built once for a given
 * source, below), not `node --import tsx` over the source tree: tsx resolving and transforming
 * some five hundred modules through its loader thread made every start cost seconds of CPU, and
 * the suite starts some hundred and fifty. The bundle is the same code (each module's `import.meta.url`
 * is kept as its source file's, so migrations, the API page's assets and the CLI's path resolve
 * as they do from source). The npm packages it imports are in it too, but for the native addons,
 * which find their binaries by path: Node resolving, reading and compiling some five hundred files
 * of them was half of every start's CPU (a start took about 1.15 s of CPU with them left to Node, 0.7 s
 * bundled, on the 2-core machine). A child the server starts itself (the
 * scheduled backup runs `cli.ts`) still gets tsx. STRONGROOM_SPAWN_SOURCE=1 runs the source
 * through tsx instead, as `npm run dev` does.
 */

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A fixed sealing key, so a restarted process opens what the previous one sealed. */
export const FAULT_SECRET_KEY = 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc';
/** The base URL every process of a test deployment is given unless a test says otherwise. */
export const TEST_BASE_URL = 'http://127.0.0.1:8080';

type Env = Record<string, string | undefined>;

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Every structured log line seen so far (stdout), parsed; per-request lines excepted. */
  readonly events: { event?: string; [k: string]: unknown }[];
  /** Whatever the process wrote to stderr. */
  stderr(): string;
  /** Resolves with how the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, and wait for the process to be gone. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  /**
   * Environment over this process's and PORT=0, HOST=127.0.0.1, SVC_BASE_URL=TEST_BASE_URL. A
   * variable given as undefined is left unset.
   */
  readonly env?: Env;
  readonly startTimeoutMs?: number;
  /** Node flags before the entry point (e.g. `--expose-gc`, `--import` of a probe). */
  readonly nodeArgs?: readonly string[];
  /** Open an IPC channel to the process (`child.send`). */
  readonly ipc?: boolean;
}

/** A server that listened, or how it ended without listening (a refused configuration). */
export type Spawned =
  | { ok: true; server: ServerProcess }
  | { ok: false; code: number | null; signal: NodeJS.Signals | null; stderr: string };

/** Starts the server; resolves once it listens, or with its exit if it ends first. */
export async function spawnServer(options: SpawnOptions = {}): Promise<Spawned> {
  const env = await throughPooler({ PORT: '0', HOST: '127.0.0.1', SVC_BASE_URL: TEST_BASE_URL, ...options.env });
  const child = spawn(process.execPath, [...(await entryArgs('main', options.nodeArgs ?? []))], {
    cwd: ROOT,
    env: environment(env),
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const events: ServerProcess['events'] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close', not 'exit': by then its output is read to the end, the last log lines included.
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const port = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server neither listened nor exited in ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    void exited.then(() => {
      clearTimeout(timer);
      resolve(null);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: ServerProcess['events'][number];
      try {
        entry = JSON.parse(line) as ServerProcess['events'][number];
      } catch {
        return; // not a log line
      }
      // Request lines are left out: a soak would otherwise keep hundreds of thousands of them.
      if (entry.event !== 'http.request') events.push(entry);
      if (entry.event === 'server.listening' && typeof entry.port === 'number') {
        clearTimeout(timer);
        resolve(entry.port);
      }
    });
  });
  if (port === null) {
    const { code, signal } = await exited;
    return { ok: false, code, signal, stderr };
  }
  const gone = async (signal: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return void (await exited);
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    ok: true,
    server: {
      url: `http://127.0.0.1:${port}`,
      port,
      child,
      events,
      stderr: () => stderr,
      exited,
      kill: () => gone('SIGKILL', 0),
      stop: (graceMs = 10_000) => gone('SIGTERM', graceMs),
    },
  };
}

/** Starts the server and waits until it listens; an exit before that is an error. */
export async function startServer(options: SpawnOptions = {}): Promise<ServerProcess> {
  const s = await spawnServer(options);
  if (!s.ok) throw new Error(`server exited (${s.code ?? s.signal}) before listening: ${s.stderr}`);
  return s.server;
}

/** Starts the server, expecting it to refuse its configuration; resolves with its exit. */
export async function refusedServer(options: SpawnOptions = {}): Promise<{ code: number | null; stderr: string }> {
  const s = await spawnServer(options);
  if (s.ok) {
    await s.server.stop();
    throw new Error('the server started, but should have refused');
  }
  return s;
}

export interface StartOptions extends SpawnOptions {
  readonly dataDir: string;
}

/** The fault tests' server: over `dataDir`, sealed with FAULT_SECRET_KEY unless `env` says otherwise. */
export function startServerProcess(options: StartOptions): Promise<ServerProcess> {
  return startServer({
    ...options,
    env: { SVC_DATA_DIR: options.dataDir, SVC_SECRET_KEY: FAULT_SECRET_KEY, ...options.env },
  });
}

/** Runs the operator CLI (`apps/server/src/cli.ts`) to its end; `out` is stdout and stderr together. */
export async function runCliProcess(
  args: readonly string[],
  env: Env = {},
): Promise<{ code: number | null; out: string }> {
  const { ended } = await spawnCliProcess(args, env);
  const { code, out } = await ended;
  return { code, out };
}

/**
 * Starts the operator CLI without waiting for it: `child` to signal (a crash test's SIGKILL), and
 * `ended` with how it ended; `out` is stdout and stderr together.
 */
export async function spawnCliProcess(
  args: readonly string[],
  env: Env = {},
): Promise<{
  child: ChildProcess;
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }>;
}> {
  const child = spawn(process.execPath, [...(await entryArgs('cli', [])), ...args], {
    cwd: ROOT,
    env: environment({ SVC_BASE_URL: TEST_BASE_URL, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, out })),
  );
  return { child, ended };
}

/**
 * STRONGROOM_TEST_PGBOUNCER=1 (.ci/run sets it for a second pass over tests/multi-process): every
 * server process started over PostgreSQL reaches it through one shared PgBouncer in transaction
 * mode with SVC_PG_POOLER=transaction, as a fleet behind a pooler runs. Two server connections for
 * the whole run, so each process's transactions land on connections another process used last.
 * The CLI keeps the direct address: backups and restores go straight to PostgreSQL (docs/deployment.md).
 */
let sharedBouncer: Promise<RunningPgBouncer> | null = null;
async function throughPooler(env: Env): Promise<Env> {
  const url = env.SVC_DATABASE_URL ?? process.env.SVC_DATABASE_URL;
  if (process.env.STRONGROOM_TEST_PGBOUNCER !== '1' || !url || env.SVC_PG_POOLER !== undefined) return env;
  sharedBouncer ??= startPgBouncer(url, 2);
  const bouncer = await sharedBouncer;
  return { ...env, SVC_DATABASE_URL: bouncer.through(url), SVC_PG_POOLER: 'transaction' };
}

function environment(env: Env): Record<string, string> {
  const full: Env = { ...process.env, ...env };
  for (const [k, v] of Object.entries(full)) if (v === undefined) delete full[k];
  return full as Record<string, string>;
}

/** See the file: tsx for a child the server starts on a .ts entry point (the CLI), not for the bundle. */
const TSX_FOR_TS_ENTRY = fileURLToPath(new URL('./tsx-for-ts-entry.mjs', import.meta.url));

const SOURCES = { main: 'apps/server/src/main.ts', cli: 'apps/server/src/cli.ts' } as const;

/**
 * Node's arguments that run the server (`main.ts`) as `spawnServer` does, for a test that starts and
 * watches the process itself (the SVC_WORKERS primary, whose workers the log tells apart).
 */
export function serverArgs(nodeArgs: readonly string[] = []): Promise<string[]> {
  return entryArgs('main', nodeArgs);
}

/** Node's arguments for an entry point: its bundle, or the source through tsx. */
async function entryArgs(entry: keyof typeof SOURCES, nodeArgs: readonly string[]): Promise<string[]> {
  // A preload written in TypeScript needs tsx whichever way the entry point runs.
  const needsTsx = nodeArgs.some((a) => a.endsWith('.ts'));
  if (process.env.STRONGROOM_SPAWN_SOURCE === '1') return ['--import', 'tsx', ...nodeArgs, SOURCES[entry]];
  const dir = await bundles();
  return [...(needsTsx ? ['--import', 'tsx'] : ['--import', TSX_FOR_TS_ENTRY]), ...nodeArgs, join(dir, `${entry}.mjs`)];
}

let built: Promise<string> | undefined;
/** The directory holding main.mjs and cli.mjs for the source as it is now (built once per source). */
function bundles(): Promise<string> {
  built ??= buildBundles();
  return built;
}

const SOURCE_DIRS = [
  'apps/server/src',
  'packages/core/src',
  'packages/sql-common/src',
  'packages/adapters-node/src',
  'packages/adapters-sqlite/src',
  'packages/adapters-pg/src',
];

async function buildBundles(): Promise<string> {
  // Named by a hash of every source file it may contain, so an edit builds a new one and runs of
  // other worktrees or at other times never share a stale one.
  const hash = createHash('sha256');
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const rel = `${dir}/${name}`;
      if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
      else if (/\.(ts|json|sql)$/.test(name) && !name.endsWith('.test.ts'))
        hash
          .update(rel)
          .update('\0')
          .update(readFileSync(join(ROOT, rel)))
          .update('\0');
    }
  };
  for (const dir of SOURCE_DIRS) walk(dir);
  for (const dir of SOURCE_DIRS) hash.update(readFileSync(join(ROOT, dir, '../package.json')));
  // The npm packages bundled with it (their versions), and how it is built (this file).
  hash.update(readFileSync(join(ROOT, 'package-lock.json')));
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  const cache = join(ROOT, 'node_modules/.cache/strongroom-spawn');
  const dir = join(cache, hash.digest('hex').slice(0, 16));
  if (existsSync(join(dir, 'cli.mjs'))) return dir;
  // Bundles sit inside the repository so that the packages they leave to Node resolve from its
  // node_modules. Built beside, then renamed into place: concurrent workers never see half a file.
  const scratch = `${dir}.${process.pid}.${Date.now()}`;
  mkdirSync(scratch, { recursive: true });
  const { build } = await import('esbuild');
  const { readFile } = await import('node:fs/promises');
  for (const [entry, source] of Object.entries(SOURCES)) {
    const entryPath = join(ROOT, source);
    await build({
      entryPoints: [entryPath],
      outfile: join(scratch, `${entry}.mjs`),
      bundle: true,
      platform: 'node',
      format: 'esm',
      // The CommonJS packages in the bundle call `require` for Node's built-ins.
      banner: {
        js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);",
      },
      target: 'node20',
      // The packages that load a compiled addon by its path stay Node imports; every other one
      // is bundled (and Node's built-ins are left out by esbuild itself).
      external: ['better-sqlite3', '@node-rs/argon2'],
      conditions: ['@strongroom/source'],
      // Beside the bundle, for a run with --enable-source-maps (in the bundle, every start would read it).
      sourcemap: 'linked',
      logLevel: 'error',
      plugins: [
        {
          name: 'strongroom-sources',
          setup(b) {
            b.onLoad({ filter: /\.ts$/ }, async (a) => {
              const text = await readFile(a.path, 'utf8');
              // The entry keeps its own URL (the CLI runs when it is the process's main module).
              const contents =
                a.path === entryPath
                  ? text
                  : text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(a.path).href));
              return { contents, loader: 'ts' };
            });
          },
        },
      ],
    });
  }
  try {
    renameSync(scratch, dir);
  } catch {
    rmSync(scratch, { recursive: true, force: true }); // another worker got there first
  }
  return dir;
}
