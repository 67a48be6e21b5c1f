import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { CorsRule } from '@strongroom/adapters-node/testing';

/**
 * What the tests of the packed client share: the package as someone outside this repository gets
 * it (`npm pack`, which builds dist/, installed into an empty project), a page bundled from it with
 * esbuild, and a server for that page on an origin of its own. Only tests import this file.
 */

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumThere = existsSync(CHROMIUM);
/** Headless, and nothing a stock profile would fetch or start on its own. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Installs the packed client into a new project in `work`; the project's path. */
export async function installPackedClient(work: string): Promise<string> {
  const tarball = await packedClient();
  const project = join(work, 'app');
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'an-app', private: true, type: 'module' }));
  await run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], {
    cwd: project,
    maxBuffer: 64 * 1024 * 1024,
  });
  return project;
}

const REPO = join(PACKAGE_DIR, '../..');
/** What the tarball is built from: the package (its build bundles core in) and the locked versions. */
const PACK_INPUTS = ['packages/client', 'packages/core', 'package-lock.json'];

/**
 * The package packed (`npm pack`, whose prepack builds dist/), once for its sources as they are:
 * the test files that install it share one tarball, named by a hash of what it is built from,
 * rather than each building the package again.
 */
async function packedClient(): Promise<string> {
  const hash = createHash('sha256');
  const walk = (rel: string): void => {
    const path = join(REPO, rel);
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort())
        if (name !== 'node_modules' && name !== 'dist') walk(`${rel}/${name}`);
    } else hash.update(rel).update('\0').update(readFileSync(path)).update('\0');
  };
  for (const rel of PACK_INPUTS) walk(rel);
  const dir = join(REPO, 'node_modules/.cache/strongroom-client-pack', hash.digest('hex').slice(0, 16));
  // prepack rebuilds dist/ from scratch (tsup cleans it first): two files packing at once would
  // each ship the other's half-written build, so packing takes turns.
  return packingAlone(async () => {
    const packed = existsSync(dir) ? readdirSync(dir).find((name) => name.endsWith('.tgz')) : undefined;
    if (packed !== undefined) return join(dir, packed);
    // Packed beside, then renamed into place: a pack that failed midway is never taken for one.
    const scratch = `${dir}.${process.pid}`;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    const { stdout } = await run('npm', ['pack', '--pack-destination', scratch, '--json'], {
      cwd: PACKAGE_DIR,
      maxBuffer: 64 * 1024 * 1024,
    });
    // prepack's build log comes first on stdout, coloured when the caller forces colour (CI does), so
    // its escape codes hold '[' too: the JSON report is the part that starts a line with '['.
    const { filename } = (JSON.parse(stdout.slice(stdout.search(/^\[/m))) as { filename: string }[])[0]!;
    renameSync(scratch, dir);
    return join(dir, filename);
  });
}

/** Runs `step` while holding a lock on packing this package (a directory only one process can make). */
async function packingAlone<T>(step: () => Promise<T>): Promise<T> {
  const lock = join(
    tmpdir(),
    `strongroom-client-pack-${createHash('sha256').update(PACKAGE_DIR).digest('hex').slice(0, 16)}`,
  );
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // A holder that died long ago (a killed run) leaves its lock: no pack takes ten minutes.
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - since > 600_000) rmSync(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await step();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Bundles `source` (an ES module importing '@strongroom/client') for a browser, from inside `project`. */
export async function bundleForBrowser(project: string, name: string, source: string): Promise<string> {
  const entry = join(project, `${name}.js`);
  writeFileSync(entry, source);
  const bundle = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    write: false,
    absWorkingDir: project,
  });
  return bundle.outputFiles[0]!.text;
}

/** A file the page server serves: text, or bytes made as they are sent. */
export interface PageFile {
  readonly type: string;
  readonly body: string | (() => Iterable<Uint8Array>);
}

/** A server for the app's pages: `files` by path, anything else 404. */
export async function pageServer(
  files: Map<string, PageFile>,
  host = '127.0.0.1',
): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const file = files.get(req.url ?? '/');
    if (!file) return void res.writeHead(404).end();
    if (typeof file.body === 'string') return void res.writeHead(200, { 'content-type': file.type }).end(file.body);
    res.writeHead(200, { 'content-type': file.type });
    Readable.from(file.body()).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    origin: `http://${host}:${(server.address() as { port: number }).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** The bucket CORS rule exactly as docs/object-storage.md gives it (the JSON block after "The bucket's CORS rule"). */
export function documentedBucketCors(): CorsRule[] {
  const page = readFileSync(join(PACKAGE_DIR, '..', '..', 'docs', 'object-storage.md'), 'utf8');
  const from = page.indexOf("The bucket's CORS rule");
  const block = /```json\n([\s\S]*?)```/.exec(page.slice(from));
  if (from < 0 || block === null) throw new Error('docs/object-storage.md gives no bucket CORS rule');
  return (JSON.parse(block[1]!) as { CORSRules: CorsRule[] }).CORSRules;
}
