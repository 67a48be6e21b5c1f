import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, type ServerProcess } from '@strongroom/tests/spawn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The example, run as an app would run it: its own process, talking over the network to a real
 * server process (SQLite in a scratch directory, PORT=0, the port read from its listening line).
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let server: ServerProcess | undefined;
let baseUrl: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'strongroom-example-'));
  server = await startServer({ env: { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' } });
  baseUrl = server.url;
}, 40_000);

afterAll(async () => {
  await server?.stop(5_000);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('examples/tour.ts against a real server process', () => {
  it('gets through every step using only the client', { timeout: 90_000 }, async () => {
    const child = spawn(
      process.execPath,
      ['--conditions=@strongroom/source', '--import', 'tsx', 'packages/client/examples/tour.ts'],
      {
        cwd: ROOT,
        env: { ...process.env, STRONGROOM_URL: baseUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const steps = stdout
      .trim()
      .split('\n')
      .map((l) => l.replace(/^ok /, '').replace(/ .*$/, ''));
    expect(steps).toEqual([
      'register',
      'totp',
      'signed',
      'directory',
      'uploaded',
      'quota',
      'sessions',
      'revoked',
      'old',
    ]);
    expect(stdout).toMatch(/ok uploaded \{"state":"Completed"/);
    expect(stdout).toMatch(/ok sessions \{"count":2\}/);
    expect(stdout).toMatch(/ok revoked all \{"sessions_closed":2\}/);
    expect(stdout).toMatch(/ok old session refused error\.auth\.session_invalid/);
  });
});
