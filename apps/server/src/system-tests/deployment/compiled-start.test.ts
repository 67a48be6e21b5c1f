import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `npm start` runs the compiled server: the root package.json's start command, exactly as npm
 * would run it, after `npm run build`, under plain Node with a module hook that refuses any
 * TypeScript file. The server must reach /readyz 200 (so it found its migrations) and serve the
 * /docs assets (found through swagger-ui-dist), and `npm run cli` must run the same way.
 */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const work = mkdtempSync(join(tmpdir(), 'sr-compiled-'));

// Any module Node is asked to load that is TypeScript fails the start (a loader such as tsx would
// otherwise run it silently; Node 22.18+ would strip its types by itself).
const hooks = join(work, 'no-typescript-hooks.mjs');
writeFileSync(
  hooks,
  `export async function load(url, context, next) {
  if (/\\.[cm]?tsx?$/.test(new URL(url).pathname)) throw new Error('a TypeScript module was loaded: ' + url);
  return next(url, context);
}
`,
);
const register = join(work, 'no-typescript.mjs');
writeFileSync(
  register,
  `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
);

/** The environment npm would give a script, minus anything that could load TypeScript for it. */
function plainEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, NODE_OPTIONS: `--import=${pathToFileURL(register).href}` };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_') && !(k in extra)) delete env[k];
  delete env.VITEST;
  return env;
}

let server: ReturnType<typeof spawn> | null = null;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(() => {
  // The start command runs in a shell of its own process group: stop the group (the shell and node).
  if (server?.pid !== undefined && server.exitCode === null) process.kill(-server.pid, 'SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

describe('npm start runs compiled JavaScript', { timeout: 120_000 }, () => {
  // The build takes seconds on a quiet machine and a minute on a loaded one; a hook gets 10 s by default.
  beforeAll(() => {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, encoding: 'utf8', timeout: 100_000 });
    if (build.status !== 0) throw new Error(`npm run build failed (${build.status}): ${build.stderr}${build.stdout}`);
  }, 110_000);

  it('the start and cli scripts name a file under dist/ and no TypeScript loader; start execs node in place of its shell', () => {
    // `exec`: npm forwards SIGTERM and SIGINT to the shell it runs a script in, and a shell that
    // runs node as its child neither passes them on nor waits: node would be left running.
    expect(scripts.start).toMatch(/^exec node /);
    for (const name of ['start', 'cli']) {
      expect(scripts[name]).toMatch(/^(exec )?node (--[a-z-]+ )*apps\/server\/dist\/[a-z]+\.js$/);
      expect(scripts[name]).not.toMatch(/tsx|--import|--loader|\.ts\b/);
    }
    // Built on install: `npm install` and `npm ci` run the root prepare script.
    expect(scripts.prepare).toContain('build');
  });

  it('the start command serves, with its migrations applied and the /docs assets found', async () => {
    server = spawn('sh', ['-c', scripts.start!], {
      cwd: ROOT,
      env: plainEnv({
        PORT: '0',
        HOST: '127.0.0.1',
        SVC_DATA_DIR: join(work, 'data'),
        SVC_BASE_URL: 'http://127.0.0.1:8080',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stderr = '';
    server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening in 30 s: ${stderr}`)), 30_000);
      server!.once('exit', (code) => reject(new Error(`exited ${code} before listening: ${stderr}`)));
      createInterface({ input: server!.stdout! }).on('line', (line) => {
        if (!line.includes('"server.listening"')) return;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      });
    });
    const base = `http://127.0.0.1:${port}`;
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    const css = await fetch(`${base}/docs/swagger-ui.css`);
    expect(css.status).toBe(200);
    expect((await css.text()).length).toBeGreaterThan(1000);
    const doc = await fetch(`${base}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(stderr).toBe('');
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the npm process of \`npm start\` drains the server: the port closes within the drain timeout, no node is left`, async () => {
      const grace = 5;
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        env: plainEnv({
          PORT: '0',
          HOST: '127.0.0.1',
          SVC_DATA_DIR: join(work, `npm-${signal}`),
          SVC_BASE_URL: 'http://127.0.0.1:8080',
          SVC_SHUTDOWN_GRACE_S: String(grace),
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let stderr = '';
      npm.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        npm.once('exit', (code, sig) => resolve({ code, signal: sig })),
      );
      const lines: string[] = [];
      const listening = await new Promise<{ port: number; pid: number }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not listening in 30 s: ${stderr}`)), 30_000);
        void exited.then(({ code }) => reject(new Error(`npm exited ${code} before listening: ${stderr}`)));
        createInterface({ input: npm.stdout! }).on('line', (line) => {
          lines.push(line);
          if (!line.includes('"server.listening"')) return;
          clearTimeout(timer);
          resolve(JSON.parse(line) as { port: number; pid: number });
        });
      });
      try {
        expect(listening.pid).not.toBe(npm.pid);
        expect((await fetch(`http://127.0.0.1:${listening.port}/healthz`)).status).toBe(200);
        npm.kill(signal);
        const outcome = await Promise.race([
          exited,
          new Promise<'still running'>((resolve) =>
            setTimeout(() => resolve('still running'), (grace + 2) * 1000).unref(),
          ),
        ]);
        expect(outcome).toEqual({ code: 0, signal: null });
        expect(lines.some((l) => l.includes('"server.stopped"'))).toBe(true);
        // The server process itself is gone (not reparented and still serving), and the port is closed.
        expect(alive(listening.pid)).toBe(false);
        await expect(fetch(`http://127.0.0.1:${listening.port}/healthz`)).rejects.toThrow();
      } finally {
        if (alive(listening.pid)) process.kill(listening.pid, 'SIGKILL');
        if (npm.exitCode === null && npm.pid !== undefined) process.kill(-npm.pid, 'SIGKILL');
      }
    });
  }

  it('the cli command runs compiled too', () => {
    const cli = spawnSync('sh', ['-c', `${scripts.cli!} --help`], {
      cwd: ROOT,
      encoding: 'utf8',
      env: plainEnv({ SVC_DATA_DIR: join(work, 'cli-data') }),
      timeout: 30_000,
    });
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain('usage: npm run cli -- <command>');
  });
});
