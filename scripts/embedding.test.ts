import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const MARKER = '<!-- embedding-example:';

/** The TypeScript block that follows the marker in docs/embedding.md. */
function example(): string {
  const doc = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
  const from = doc.indexOf(MARKER);
  expect(from, 'docs/embedding.md has lost its example marker').toBeGreaterThan(0);
  const open = doc.indexOf('```ts\n', from);
  const close = doc.indexOf('\n```', open + 6);
  expect(open).toBeGreaterThan(from);
  expect(close).toBeGreaterThan(open);
  return doc.slice(open + 6, close + 1);
}

describe('docs/embedding.md', () => {
  it('wires the core over its own ports in under 60 lines, and the example runs as the page says', {
    timeout: 120_000,
  }, async () => {
    const code = example();
    expect(code.split('\n').length).toBeLessThan(60);
    // Inside the repository, so the example's imports resolve to the workspace packages.
    const dir = mkdtempSync(join(root, 'node_modules', '.embedding-'));
    try {
      const file = join(dir, 'example.mts');
      writeFileSync(file, code);
      const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root });
      expect(stdout).toBe('true error.auth.invalid_credentials\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
