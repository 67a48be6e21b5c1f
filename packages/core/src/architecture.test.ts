import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * ARCHITECTURE.md names the code that holds each rule as `path#name` (a function, class or constant
 * the file defines; `Class.member` for a method). Every such name must exist, so a rename or a move
 * that forgets the map fails here instead of sending a newcomer to a file that is not there.
 */
const ROOT = join(import.meta.dirname, '../../..');
const DOC = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');

/** The areas of the specification (docs/spec) the rule table must cover. */
const AREAS = [
  'Sessions',
  'Revocation',
  'Throttle',
  'Quota states and charges',
  'Access rule',
  'Sponsored accounts',
  'Guests and links',
  'Versioning and deprecation',
  'Album upgrade',
  'Federation',
  'Public records',
  'Blobs read-back',
  'Backups',
];

/** Every `path#name` in backticks, and every backticked path of a TypeScript file. */
function referencesIn(markdown: string): { path: string; name: string | null }[] {
  return [...markdown.matchAll(/`([\w./-]+\/[\w.-]+\.ts)(?:#([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?))?`/g)].map(
    (m) => ({ path: m[1]!, name: m[2] ?? null }),
  );
}

const parsed = new Map<string, Map<string, Set<string>>>();

/** The names a file declares at its top level, each with the members it declares (for classes). */
function declarations(file: string): Map<string, Set<string>> {
  const known = parsed.get(file);
  if (known) return known;
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names = new Map<string, Set<string>>();
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name)) names.set(d.name.text, new Set());
    } else if (ts.isClassDeclaration(statement) && statement.name) {
      const members = new Set<string>();
      for (const m of statement.members) if (m.name && ts.isIdentifier(m.name)) members.add(m.name.text);
      names.set(statement.name.text, members);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement)) &&
      statement.name
    ) {
      names.set(statement.name.text, new Set());
    }
  }
  parsed.set(file, names);
  return names;
}

/** What is wrong with one reference, or null when the file defines the name. */
function checkReference(root: string, ref: { path: string; name: string | null }): string | null {
  const file = join(root, ref.path);
  const shown = ref.name === null ? ref.path : `${ref.path}#${ref.name}`;
  if (!existsSync(file)) return `${shown}: no such file`;
  if (ref.name === null) return null;
  const [top, member] = ref.name.split('.') as [string, string | undefined];
  const members = declarations(file).get(top);
  if (members === undefined) return `${shown}: ${ref.path} defines no ${top}`;
  if (member !== undefined && !members.has(member)) return `${shown}: ${top} has no member ${member}`;
  return null;
}

/** The first cells of the rule table's rows. */
function tableAreas(markdown: string): Set<string> {
  const table = markdown.slice(markdown.indexOf('## Where each rule lives'));
  return new Set(
    [...table.matchAll(/^\| ([^|]+?) \|/gm)].map((m) => m[1]!).filter((a) => a !== 'Area' && !a.startsWith('---')),
  );
}

describe('ARCHITECTURE.md', () => {
  const refs = referencesIn(DOC);

  it('names real code: every path exists and defines the function, class or member named after #', () => {
    expect(refs.filter((r) => r.name !== null).length).toBeGreaterThan(80);
    expect(refs.map((r) => checkReference(ROOT, r)).filter((p) => p !== null)).toEqual([]);
  });

  it('would catch a typo, a missing file and a missing method', () => {
    expect(checkReference(ROOT, { path: 'packages/core/src/access/rules.ts', name: 'mayReach' })).toBeNull();
    expect(checkReference(ROOT, { path: 'packages/core/src/access/rules.ts', name: 'mayReech' })).toMatch(
      /defines no mayReech/,
    );
    expect(checkReference(ROOT, { path: 'packages/core/src/access/rule.ts', name: 'mayReach' })).toMatch(
      /no such file/,
    );
    expect(
      checkReference(ROOT, { path: 'packages/core/src/session/service.ts', name: 'SessionService.authenticat' }),
    ).toMatch(/has no member authenticat/);
  });

  it('has a row for every area of the specification', () => {
    const areas = tableAreas(DOC);
    expect(AREAS.filter((a) => !areas.has(a))).toEqual([]);
  });

  it('lists every folder of the core', () => {
    const folders = readdirSync(import.meta.dirname, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.length).toBeGreaterThan(20);
    expect(folders.filter((f) => !DOC.includes(`| \`${f}/\` |`))).toEqual([]);
  });
});
