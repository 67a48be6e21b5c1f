import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '@strongroom/tests/spawn';

/**
 * The README's shell blocks and those of the tour it continues in docs/tour.md, run: every ```sh
 * block, in order (the README's first), in one bash, against a fresh server process, except a block
 * marked `<!-- readme-test: not run (why) -->` on the line before it. The blocks run as written;
 * only the address they name (127.0.0.1:8080) becomes the test server's. Each curl is wrapped to
 * report its status on stderr, and every answer must be a success except the one the README shows
 * as an error.
 */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const PAGES = ['README.md', 'docs/tour.md'].map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
const NOT_RUN = /^<!-- readme-test: not run \((.+)\) -->$/;

interface Block {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/** A page's ```sh blocks that are to run, in order. */
export function shellBlocks(
  markdown: string,
  file = 'README.md',
): { run: Block[]; notRun: { file: string; line: number; why: string }[] } {
  const lines = markdown.split('\n');
  const run: Block[] = [];
  const notRun: { file: string; line: number; why: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```sh') continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`${file}:${i + 1}: a sh block that never closes`);
    const why = NOT_RUN.exec(lines[i - 1] ?? '')?.[1];
    if (why) notRun.push({ file, line: i + 1, why });
    else run.push({ file, line: i + 1, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return { run, notRun };
}

let server: ServerProcess;
const dataDir = mkdtempSync(join(tmpdir(), 'sr-readme-'));

beforeAll(async () => {
  server = await startServerProcess({ dataDir });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("the README's shell blocks", { timeout: 120_000 }, () => {
  it('run against a started server, every answer a success but the error the README shows', async () => {
    const pages = PAGES.map((p) => shellBlocks(p.text, p.file));
    const run = pages.flatMap((p) => p.run);
    const notRun = pages.flatMap((p) => p.notRun);
    // The README's tour, then the family, links and guest-upload walk-through at least.
    expect(pages[0]!.run.length).toBeGreaterThanOrEqual(2);
    expect(run.length).toBeGreaterThanOrEqual(4);
    for (const n of notRun) expect(n.why.length, `${n.file}:${n.line}`).toBeGreaterThan(10);

    const script = [
      'set -euo pipefail',
      // Every curl's answer, on stderr, for the checks below; the README's own output is untouched.
      `curl() { command curl -w '%{stderr}readme-test: %{http_code} %{method} %{url_effective}\\n' "$@"; }`,
      ...run.map((b) => `# ${b.file}:${b.line}\n${b.text}`),
    ]
      .join('\n')
      .replaceAll('http://127.0.0.1:8080', server.url);
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        const child = spawn('bash', ['-c', script], {
          cwd: ROOT,
          env: { ...process.env, NODE_OPTIONS: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.once('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
      },
    );
    const answers = stderr
      .split('\n')
      .filter((l) => l.startsWith('readme-test: '))
      .map((l) => {
        const [status, method, url] = l.slice('readme-test: '.length).split(' ');
        return { status: Number(status), method: method!, path: new URL(url!).pathname };
      });
    const context = `exit ${code}\n--- stderr\n${stderr}\n--- stdout (end)\n${stdout.slice(-1500)}`;
    expect(code, context).toBe(0);
    const failures = answers.filter((a) => a.status >= 400);
    expect(failures, context).toEqual([{ status: 401, method: 'GET', path: '/v1/auth/profile' }]);
    // The walk-through reaches its end: the guest's drop is finalized, then adopted, then read back.
    const statusOf = (method: string, pattern: RegExp) =>
      answers.filter((a) => a.method === method && pattern.test(a.path)).map((a) => a.status);
    // Two finalizes: the guest's drop, then the resumable (tus) upload sent in two PATCHes.
    expect(statusOf('POST', /^\/upload\/[^/]+\/finalize$/), context).toEqual([200, 200]);
    expect(statusOf('PATCH', /^\/upload-tus\/[^/]+$/), context).toEqual([204, 204]);
    expect(stdout).toContain('upload-offset: 3');
    expect(statusOf('POST', /^\/v1\/drops\/[^/]+\/adopt$/), context).toEqual([200]);
    expect(statusOf('GET', /^\/v1\/blobs\//), context).toEqual([200, 206]);
    expect(stdout).toContain('hello');
  });
});
