import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The production install carries only what it runs. The production sequence in docs/deployment.md ends with an
 * `npm prune`; that exact command, run as a dry run against the lockfile (offline, nothing
 * changes), must remove every copy of the test runner, the bundlers, the TypeScript compiler and
 * loader and the embedded PostgreSQL, and must keep everything the server imports at run time.
 */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const readme = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean; link?: boolean }>;
};
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };

const TOOLING = ['vitest', 'vite', 'typescript', 'tsx', 'esbuild', '@electric-sql/pglite'];

/** Every copy of a package the lockfile installs (hoisted or nested). */
const copies = (name: string) =>
  Object.keys(lock.packages).filter((p) => p === `node_modules/${name}` || p.endsWith(`/node_modules/${name}`)).length;

describe('the production install of docs/deployment.md', () => {
  const sequence = /`(npm ci && npm run build && (npm prune [^`]+))`/.exec(readme);

  it('names one production sequence that builds before it prunes', () => {
    expect(sequence, 'docs/deployment.md names `npm ci && npm run build && npm prune …`').not.toBeNull();
  });

  it('its prune leaves no test runner, bundler, TypeScript or PGlite, and keeps every runtime dependency', () => {
    const prune = sequence![2]!.split(/\s+/).slice(1);
    const run = spawnSync('npm', [...prune, '--dry-run', '--offline', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const removed = new Map<string, number>();
    for (const m of run.stdout.matchAll(/^remove (\S+) \S+$/gm)) removed.set(m[1]!, (removed.get(m[1]!) ?? 0) + 1);
    expect(removed.size, 'the dry run lists what it removes').toBeGreaterThan(0);

    for (const name of TOOLING) {
      expect(copies(name), `${name} is in the lockfile (a dev install has it)`).toBeGreaterThan(0);
      expect(removed.get(name) ?? 0, `every copy of ${name} is pruned`).toBe(copies(name));
    }

    // What the compiled server imports: the registry dependencies of the server and of every
    // workspace package it bundles.
    const runtime = new Set<string>();
    for (const dir of [
      'apps/server',
      'packages/core',
      'packages/sql-common',
      'packages/adapters-node',
      'packages/adapters-sqlite',
      'packages/adapters-pg',
    ]) {
      for (const dep of Object.keys(manifest(dir).dependencies ?? {}))
        if (!dep.startsWith('@strongroom/')) runtime.add(dep);
    }
    expect(runtime.has('hono') && runtime.has('pg') && runtime.has('better-sqlite3')).toBe(true);
    for (const dep of runtime) expect(removed.has(dep), `${dep} is kept`).toBe(false);
  }, 90_000);
});
