import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { unknownSettings } from './startup-checks.js';

/**
 * Start-up failures of a real server process: each is one line on stderr naming the setting, its
 * value and the cause, and nothing was written before it.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sr-startup-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Outcome {
  readonly listening: boolean;
  readonly code: number | null;
  readonly stderr: string;
  readonly stdout: string[];
}

/** Runs main.ts until it logs server.listening (then stops it) or exits. */
function run(env: Record<string, string>): Promise<Outcome> {
  const full: Record<string, string | undefined> = { ...process.env, PORT: '0', HOST: '127.0.0.1', SVC_BASE_URL: 'http://127.0.0.1:8080', ...env };
  for (const k of Object.keys(full)) if (k.startsWith('SVC_') && !(k in env) && k !== 'SVC_BASE_URL') delete full[k];
  delete full.PG_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/server/src/main.ts'], { cwd: ROOT, env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const stdout: string[] = [];
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise<Outcome>((resolve, reject) => {
    let listening = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`neither listening nor exited in 60 s: ${stderr}`));
    }, 60_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      stdout.push(line);
      // The unknown-setting warnings follow the listening line in the same turn; stop a moment later.
      if (line.includes('"server.listening"')) {
        listening = true;
        setTimeout(() => child.kill('SIGTERM'), 300);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ listening, code, stderr, stdout });
    });
  });
}

describe('start-up failures name the setting, the value and the cause', { timeout: 120_000 }, () => {
  it('a busy port: one line naming PORT, and the data directory left untouched', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as { port: number }).port;
    const dataDir = join(tempDir(), 'data');
    try {
      const o = await run({ PORT: String(port), SVC_DATA_DIR: dataDir });
      expect(o.listening).toBe(false);
      expect(o.code).toBe(1);
      expect(o.stderr.trim().split('\n')).toHaveLength(1);
      expect(o.stderr).toContain(`PORT=${port}`);
      expect(o.stderr).toContain('already in use');
      // Nothing written: no secret key, no database, not even the directory.
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      busy.close();
    }
  });

  it('a data directory that cannot be created or written: one line naming SVC_DATA_DIR and its path', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a directory');
    for (const dataDir of [file, join(file, 'below'), '/proc/strongroom-x']) {
      const o = await run({ SVC_DATA_DIR: dataDir });
      expect(o.listening, dataDir).toBe(false);
      expect(o.code, dataDir).toBe(1);
      expect(o.stderr.trim().split('\n'), dataDir).toHaveLength(1);
      expect(o.stderr, dataDir).toContain(`SVC_DATA_DIR=${dataDir}`);
      expect(o.stderr, dataDir).toMatch(/E[A-Z]+/);
    }
  });

  it('an unreachable database: one line naming SVC_DATABASE_URL without its password', async () => {
    const o = await run({ SVC_DATA_DIR: tempDir(), SVC_DATABASE_URL: 'postgres://strongroom:hunter2secret@127.0.0.1:1/strongroom' });
    expect(o.listening).toBe(false);
    expect(o.code).toBe(1);
    expect(o.stderr).toContain('SVC_DATABASE_URL=postgres://strongroom:***@127.0.0.1:1/strongroom');
    expect(o.stderr).not.toContain('hunter2secret');
  });

  it('a misspelt setting is warned about by name, with the closest known one', async () => {
    const dataDir = tempDir();
    const o = await run({ SVC_DATA_DIR: dataDir, SVC_QUOTA_HARD: '1000' });
    expect(o.listening).toBe(true);
    const warnings = o.stdout.filter((l) => l.includes('config.unknown_setting')).map((l) => JSON.parse(l) as { name: string; did_you_mean?: string });
    expect(warnings).toEqual([expect.objectContaining({ name: 'SVC_QUOTA_HARD', did_you_mean: 'SVC_QUOTA_HARD_BYTES' })]);
    expect(readdirSync(dataDir)).toContain('strongroom.db');
  });
});

describe('unknownSettings', () => {
  it('names only SVC_ variables never asked for, with a close guess or none', () => {
    const asked = new Set(['SVC_QUOTA_HARD_BYTES', 'SVC_DATA_DIR', 'SVC_BASE_URL']);
    expect(unknownSettings(['PATH', 'SVC_DATA_DIR', 'SVC_QUOTA_HARD', 'SVC_DATADIR', 'SVC_ZZZZZZZZZZZZZZZZZZZZZZZ'], asked)).toEqual([
      { name: 'SVC_DATADIR', closest: 'SVC_DATA_DIR' },
      { name: 'SVC_QUOTA_HARD', closest: 'SVC_QUOTA_HARD_BYTES' },
      { name: 'SVC_ZZZZZZZZZZZZZZZZZZZZZZZ', closest: null },
    ]);
  });
});
