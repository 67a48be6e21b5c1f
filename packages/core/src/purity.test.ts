import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Core is pure: no Node built-ins, no native modules, no framework, no ambient time or randomness.
const FORBIDDEN: [RegExp, string][] = [
  [/from ['"]node:/, 'a node: import'],
  [/from ['"](fs|path|crypto|os|child_process|net|http)['"]/, 'a Node built-in'],
  [/from ['"](better-sqlite3|postgres|@node-rs\/argon2|hono|drizzle-orm)/, 'a native module or framework'],
  [/Date\.now\(|new Date\(\)/, 'ambient time'],
  [/Math\.random\(|getRandomValues\(|randomUUID\(/, 'ambient randomness'],
  [/from ['"]@strongroom\//, 'an import of a workspace package (core imports itself by relative path)'],
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

describe('core purity', () => {
  const files = sources(import.meta.dirname);
  it('has sources to check', () => expect(files.length).toBeGreaterThan(10));
  for (const [pattern, what] of FORBIDDEN) {
    it(`contains no ${what}`, () => {
      const offenders = files.filter((f) => pattern.test(readFileSync(f, 'utf8')));
      expect(offenders).toEqual([]);
    });
  }

  // The rooms of ARCHITECTURE.md: test support stays out of the product, fast-check out of the fakes.
  const inside = (folder: string) => (f: string) => relative(import.meta.dirname, f).startsWith(`${folder}/`);
  it('imports testing/ only from testing/', () => {
    const offenders = files.filter(
      (f) => !inside('testing')(f) && /from ['"][./]*\/testing\//.test(readFileSync(f, 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
  it('imports fast-check only in testing/models/', () => {
    const offenders = files.filter(
      (f) => !inside('testing/models')(f) && /from ['"]fast-check['"]/.test(readFileSync(f, 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
  it('ports/ imports and re-exports types only, so any folder may import it', () => {
    const offenders = files.filter(
      (f) =>
        inside('ports')(f) &&
        /^(import|export) (?!type )(\{[^}]*\}|\*(?: as \w+)?|\w+)\s+from\s+['"]/m.test(readFileSync(f, 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
});
