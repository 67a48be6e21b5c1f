import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const packages = join(import.meta.dirname, '..', '..');

function testSources(dir: string): string {
  let out = '';
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out += testSources(p);
    else if (entry.name.endsWith('.test.ts')) out += readFileSync(p, 'utf8');
  }
  return out;
}

describe('every adapter runs the port contracts', () => {
  const adapters = readdirSync(packages).filter((d) => d.startsWith('adapters-') && d !== 'adapters-node');
  it('finds the adapters', () => {
    expect(adapters).toContain('adapters-sqlite');
  });
  for (const adapter of adapters) {
    it(`${adapter} calls describePortContracts`, () => {
      expect(testSources(join(packages, adapter, 'src'))).toMatch(/describePortContracts\(/);
    });
  }
});
