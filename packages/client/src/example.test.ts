import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The example, run as an app would run it: its own process, talking over the network to a real
 * server process (SQLite in a scratch directory, PORT=0, the port read from its listening line).
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let server: ChildProcess;
let baseUrl: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'strongroom-example-'));
  server = spawn(process.execPath, ['--import', 'tsx', 'apps/server/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 30 s: ${stderr}`)), 30_000);
    server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
    createInterface({ input: server.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { event?: string; port?: number };
        if (entry.event === 'server.listening' && entry.port) {
          clearTimeout(timer);
          resolve(entry.port);
        }
      } catch {
        /* not a log line */
      }
    });
  });
  baseUrl = `http://127.0.0.1:${port}`;
}, 40_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    await new Promise<void>((resolve) => {
      server.once('exit', () => resolve());
      server.kill('SIGTERM');
      setTimeout(() => server.kill('SIGKILL'), 5_000).unref();
    });
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('examples/tour.ts against a real server process', () => {
  it('gets through every step using only the client', { timeout: 90_000 }, async () => {
    const child = spawn(process.execPath, ['--conditions=@strongroom/source', '--import', 'tsx', 'packages/client/examples/tour.ts'], {
      cwd: ROOT,
      env: { ...process.env, STRONGROOM_URL: baseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const steps = stdout.trim().split('\n').map((l) => l.replace(/^ok /, '').replace(/ .*$/, ''));
    expect(steps).toEqual(['register', 'totp', 'signed', 'directory', 'uploaded', 'quota', 'sessions', 'revoked', 'old']);
    expect(stdout).toMatch(/ok uploaded \{"state":"Completed"/);
    expect(stdout).toMatch(/ok sessions \{"count":2\}/);
    expect(stdout).toMatch(/ok revoked all \{"sessions_closed":2\}/);
    expect(stdout).toMatch(/ok old session refused error\.auth\.session_invalid/);
  });
});
