import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const packages = join(import.meta.dirname, '..', '..');

/** Whether the source really calls `name(...)`: parsed, so a call in a comment or a string does not count. */
function callsFunction(source: string, name: string): boolean {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === name) found = true;
    else ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function testSources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testSources(p));
    else if (entry.name.endsWith('.test.ts')) out.push(readFileSync(p, 'utf8'));
  }
  return out;
}

describe('every adapter runs the contracts', () => {
  it('the check reads code, not text', () => {
    expect(callsFunction(`describePortContracts('x', setup);`, 'describePortContracts')).toBe(true);
    expect(callsFunction(`// describePortContracts('x', setup);`, 'describePortContracts')).toBe(false);
    expect(
      callsFunction(
        `/* describePortContracts('x', setup); */ const a = 'describePortContracts(';`,
        'describePortContracts',
      ),
    ).toBe(false);
  });

  const adapters = readdirSync(packages).filter((d) => d.startsWith('adapters-') && d !== 'adapters-node');
  it('finds the database adapters', () => {
    expect(adapters).toEqual(expect.arrayContaining(['adapters-sqlite', 'adapters-pg']));
  });
  for (const adapter of adapters) {
    it(`${adapter} calls describePortContracts`, () => {
      expect(testSources(join(packages, adapter, 'src')).some((s) => callsFunction(s, 'describePortContracts'))).toBe(
        true,
      );
    });
  }
  it('adapters-node runs the BlobStore contract on the filesystem store', () => {
    expect(
      testSources(join(packages, 'adapters-node', 'src')).some((s) => callsFunction(s, 'describeBlobStoreContract')),
    ).toBe(true);
  });
});
