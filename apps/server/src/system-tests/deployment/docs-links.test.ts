import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/** scripts/check-links.mjs, which .ci/run runs over README.md, docs/ and the package READMEs. */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sr-links-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const check = (...files: string[]) =>
  spawnSync(process.execPath, [join(ROOT, 'scripts', 'check-links.mjs'), ...files], { cwd: ROOT, encoding: 'utf8' });

describe('the relative-link check', () => {
  it('passes on the repository as it is', () => {
    const r = check();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('names a missing file and a missing heading, and leaves code and other schemes alone', () => {
    writeFileSync(join(dir, 'target.md'), '# Target\n\n## Public records and `code`\n');
    writeFileSync(
      join(dir, 'doc.md'),
      [
        '# Doc',
        '',
        'Fine: [t](target.md), [h](target.md#public-records-and-code), [self](#doc), [web](https://example.org/nowhere).',
        '',
        'Broken: [gone](missing.md) and [anchor](target.md#no-such-heading).',
        '',
        '```sh',
        'echo "[not a link](nowhere.md)"',
        '```',
        '',
        'Nor is `[this](nowhere.md)`.',
        '',
      ].join('\n'),
    );
    const r = check(join(dir, 'doc.md'));
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/doc\.md:5: missing\.md: no such file$/);
    expect(lines[1]).toMatch(/doc\.md:5: target\.md#no-such-heading: no heading with that anchor/);
  });
});
