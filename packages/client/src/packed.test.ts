import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { testServer, type TestServer } from '@strongroom/tests';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bundleForBrowser,
  CHROMIUM,
  CHROMIUM_FLAGS,
  chromiumThere,
  installPackedClient,
  pageServer,
} from './testing/packed-app.js';

/**
 * The package as someone outside this repository gets it: `npm pack` (which builds dist/), the
 * tarball installed into an empty project, then used from plain Node (no TypeScript loader) and
 * from a browser bundle in headless Chromium, against a real server on loopback.
 */

const run = promisify(execFile);

let work: string;
let project: string;
let s: TestServer;
let page: Awaited<ReturnType<typeof pageServer>>;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sr-packed-'));
  // The page server first: the API server must name its origin in SVC_CORS_ORIGINS.
  const files = new Map<string, { type: string; body: string }>();
  page = await pageServer(files);
  s = await testServer({ SVC_CORS_ORIGINS: page.origin });
  project = await installPackedClient(work);
  const bundle = await bundleForBrowser(
    project,
    'browser-entry',
    `import { StrongroomClient, OutageError } from '@strongroom/client';
window.tour = async (baseUrl, address) => {
  const client = new StrongroomClient({ baseUrl });
  await client.register(address, 'correct horse battery staple');
  const { data } = await client.api.GET('/v1/auth/profile');
  await client.signOut();
  const down = await new StrongroomClient({ baseUrl: 'http://127.0.0.1:9' }).register(address, 'x'.repeat(12)).catch((e) => e);
  return { address: data.address, signedOut: client.session === null, outage: down instanceof OutageError };
};`,
  );
  files.set('/', { type: 'text/html', body: '<!doctype html><title>app</title><script src="/app.js"></script>' });
  files.set('/app.js', { type: 'text/javascript', body: bundle });
}, 300_000);

afterAll(async () => {
  await s?.close();
  await page?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed @strongroom/client', { timeout: 120_000 }, () => {
  it('carries the licence its package.json names (Apache-2.0), whole', () => {
    const installed = join(project, 'node_modules', '@strongroom', 'client');
    expect((JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license: string }).license).toBe(
      'Apache-2.0',
    );
    const licence = readFileSync(join(installed, 'LICENSE'), 'utf8');
    expect(licence).toContain('Apache License\n                           Version 2.0, January 2004');
    expect(licence).toContain('END OF TERMS AND CONDITIONS');
  });

  it('ships built JavaScript and declarations only, and depends on nothing unpublished', async () => {
    const installed = join(project, 'node_modules', '@strongroom', 'client');
    expect(readdirSync(join(installed, 'dist')).sort()).toEqual(expect.arrayContaining(['index.js', 'index.d.ts']));
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', '@strongroom', 'core'))).toBe(false);
  });

  it('runs in plain Node: register, read the profile, sign out; an unreachable server is an OutageError', async () => {
    const script = `import { StrongroomClient, OutageError } from '@strongroom/client';
const client = new StrongroomClient({ baseUrl: process.argv[1] });
await client.register('packed-node@example.org', 'correct horse battery staple');
const { data } = await client.api.GET('/v1/auth/profile');
await client.signOut();
const down = await new StrongroomClient({ baseUrl: 'http://127.0.0.1:9' }).register('a@b.co', 'x'.repeat(12)).catch((e) => e);
console.log(JSON.stringify({ address: data.address, signedOut: client.session === null, outage: down instanceof OutageError }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, s.baseUrl], { cwd: project });
    expect(JSON.parse(stdout.trim())).toEqual({ address: 'packed-node@example.org', signedOut: true, outage: true });
  });

  it.skipIf(!chromiumThere)(
    'runs as a browser bundle in headless Chromium, cross-origin under SVC_CORS_ORIGINS',
    async () => {
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
      try {
        const tab = await browser.newPage();
        const errors: string[] = [];
        tab.on('pageerror', (e) => errors.push(String(e)));
        await tab.goto(`${page.origin}/`);
        const result = await tab.evaluate(
          ([base, address]) =>
            (window as unknown as { tour(b: string, a: string): Promise<unknown> }).tour(base!, address!),
          [s.baseUrl, 'packed-browser@example.org'],
        );
        expect(result).toEqual({ address: 'packed-browser@example.org', signedOut: true, outage: true });
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
  );
});
