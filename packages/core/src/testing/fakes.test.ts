import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * `import { FakeClock } from '@strongroom/core/testing'` must not load fast-check: the fakes are
 * what every package's tests and the bench use, and fast-check is only an optional peer of core.
 * Each entry is imported in a fresh Node process (this worker has fast-check loaded already) whose
 * resolve hook throws the moment anything asks for fast-check, naming the module that asked.
 */
const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

const HOOKS = `export async function resolve(specifier, context, next) {
  if (specifier === 'fast-check' || specifier.startsWith('fast-check/')) throw new Error('fast-check imported by ' + context.parentURL);
  return next(specifier, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;

function importInFreshProcess(entry: string): Promise<{ ok: boolean; output: string }> {
  const script = `const m = await import(${JSON.stringify(entry)}); console.log(Object.keys(m).length + ' exports');`;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        `data:text/javascript,${encodeURIComponent(REGISTER)}`,
        '--input-type=module',
        '-e',
        script,
      ],
      { cwd: ROOT, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ ok: err === null, output: `${stdout}${stderr}` }),
    );
  });
}

describe.concurrent('@strongroom/core/testing loads no fast-check', () => {
  it('the fakes entry imports in a process where fast-check cannot be resolved', async () => {
    const { ok, output } = await importInFreshProcess('@strongroom/core/testing');
    expect(output).toMatch(/\d+ exports/);
    expect(ok).toBe(true);
  });

  it('the models entry does need fast-check, so the hook above would catch it', async () => {
    const { ok, output } = await importInFreshProcess('@strongroom/core/testing/models');
    expect(ok).toBe(false);
    expect(output).toMatch(/fast-check imported by file:.*testing\/models\//);
  });
});
