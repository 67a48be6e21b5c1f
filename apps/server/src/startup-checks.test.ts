import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkDataDir } from './startup-checks.js';

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'strongroom-datadir-'));
  made.push(d);
  return d;
};
const modeOf = (dir: string): number => statSync(dir).mode & 0o777;

describe("the data directory is the server user's alone", () => {
  it('one it creates is 0700', () => {
    const dir = join(scratch(), 'data');
    expect(checkDataDir(dir)).toBeNull();
    expect(modeOf(dir)).toBe(0o700);
  });

  it("one an operator made in advance with mkdir's 0755 is narrowed to 0700, and the old mode is reported", () => {
    const dir = join(scratch(), 'data');
    mkdirSync(dir, { mode: 0o755 });
    expect(modeOf(dir)).toBe(0o755);
    expect(checkDataDir(dir)).toBe(0o755);
    expect(modeOf(dir)).toBe(0o700);
    // Already narrow: nothing to report.
    expect(checkDataDir(dir)).toBeNull();
  });
});
