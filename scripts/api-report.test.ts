import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

describe('the public API reports', () => {
  // The compiler runs in a child process: emitting two packages' declarations holds the thread for
  // longer than vitest waits on a silent worker.
  it('match what each entry point exports (run npm run api:report after changing the API)', {
    timeout: 300_000,
  }, async () => {
    const outcome = await run(process.execPath, ['--import', 'tsx', 'scripts/api-report.ts', '--check'], {
      cwd: root,
    }).then(
      (r) => ({ code: 0, stderr: r.stderr, stdout: r.stdout }),
      (e: { code: number; stderr: string; stdout: string }) => ({ code: e.code, stderr: e.stderr, stdout: e.stdout }),
    );
    expect(outcome.stderr).toBe('');
    expect(outcome.stdout).toContain('checked 5 reports: packages/core/api/index.api.md, ');
    expect(outcome.stdout).toContain('packages/client/api/index.api.md');
    expect(outcome.code).toBe(0);
  });
});
