import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * The real server (`apps/server/src/main.ts`) in a process of its own, for the fault tests and the
 * soak: it listens on PORT=0 and the port is read from its `server.listening` log line, so any
 * number of these run beside other people's tests.
 */

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** A fixed sealing key, so a restarted process opens what the previous one sealed. */
export const FAULT_SECRET_KEY = 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc';

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

export interface StartOptions {
  readonly dataDir: string;
  /** Extra environment (SVC_DATABASE_URL, timeouts, quota...). */
  readonly env?: Record<string, string>;
  readonly startTimeoutMs?: number;
  /** Node flags before the entry point (e.g. `--expose-gc`, `--import` of a probe). */
  readonly nodeArgs?: readonly string[];
  /** Open an IPC channel to the process (`child.send`). */
  readonly ipc?: boolean;
}

export async function startServerProcess(options: StartOptions): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...(options.nodeArgs ?? []), 'apps/server/src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: options.dataDir,
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: FAULT_SECRET_KEY,
      ...options.env,
    },
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const events: ServerProcess['events'] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close', not 'exit': by then its output is read to the end, the last log lines included.
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time: ${stderr}`)), options.startTimeoutMs ?? 30_000);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening: ${stderr}`));
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
  const gone = async (signal: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    events,
    stderr: () => stderr,
    exited,
    kill: () => gone('SIGKILL', 0),
    stop: (graceMs = 10_000) => gone('SIGTERM', graceMs),
  };
}
