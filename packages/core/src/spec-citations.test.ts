import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/spec is the behaviour the code answers to, one numbered rule per heading (`## §9.10 Title`).
 * Code, tests and documents cite a rule as `spec §9.10` (lists: `spec §4.4, §4.6 and §4.8`, ranges:
 * `spec §4.4 to §4.10`). Every cited number must name a rule, so a renumbering or a typo fails here
 * instead of sending a reader to nothing. The documents the specification was written from are
 * named only in its own provenance note, and no file carries the project's history instead of its
 * behaviour (an issue or finding number means nothing to a reader of the tree).
 */
const ROOT = join(import.meta.dirname, '../../..');
const SPEC = join(ROOT, 'docs/spec');
const PROVENANCE = 'docs/spec/README.md';

/** Folders never scanned: installed, built or generated output, and version control. */
const SKIPPED = new Set(['node_modules', 'dist', 'data', 'coverage', 'reports', '.git', '.stryker-tmp']);
const SCANNED = /\.(?:[cm]?[jt]sx?|md|ya?ml|sh)$/;

/** Every rule of docs/spec: `§N.M` to the file that defines it. Duplicates and misplaced rules are problems. */
function specRules(files: { path: string; text: string }[]): { rules: Map<string, string>; problems: string[] } {
  const rules = new Map<string, string>();
  const problems: string[] = [];
  for (const { path, text } of files) {
    if (path.endsWith('README.md')) continue;
    const chapter = /^# §(\d+) \S/m.exec(text)?.[1];
    if (chapter === undefined) {
      problems.push(`${path}: no "# §N Title" heading`);
      continue;
    }
    for (const m of text.matchAll(/^## §(\d+)\.(\d+)(.*)$/gm)) {
      const id = `§${m[1]}.${m[2]}`;
      if (m[1] !== chapter) problems.push(`${path}: ${id} sits in chapter §${chapter}`);
      if (!/^ \S.{2,}/.test(m[3]!)) problems.push(`${path}: ${id} has no title`);
      if (rules.has(id)) problems.push(`${path}: ${id} is also defined in ${rules.get(id)}`);
      rules.set(id, path);
    }
  }
  return { rules, problems };
}

/** The rule numbers a text cites as `spec §…` (case-insensitive: a sentence may begin with it). */
function citations(text: string): string[] {
  const cited: string[] = [];
  for (const m of text.matchAll(/\bspec (§\d+\.\d+(?:(?:,? and |, | to | or )§\d+\.\d+)*)/gi))
    cited.push(...m[1]!.match(/§\d+\.\d+/g)!);
  return cited;
}

// Spelled in pieces so that this file does not match its own checks.
const SOURCES = ['service-contract', 'decisions'].map((n) => `${n}.md`);
const HISTORY: [RegExp, string][] = [
  [new RegExp(`\\b${'iss'}ue #?\\d`, 'i'), 'cites an issue'],
  [new RegExp(`\\b${'fin'}ding #?\\d`, 'i'), 'cites a finding'],
  [new RegExp(`\\b${'contr'}act \\d`, 'i'), 'cites the contract by section: cite spec §N.M'],
  [new RegExp(`\\b${'ru'}le \\d+\\.\\d`, 'i'), 'cites a rule by number: cite spec §N.M'],
];

/** What is wrong with one file's citations, given the rules of docs/spec. */
function problemsIn(path: string, text: string, rules: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const cited = path.startsWith('docs/spec/') ? (text.match(/§\d+\.\d+(?!\.\d)/g) ?? []) : citations(text);
  for (const id of new Set(cited)) if (!rules.has(id)) problems.push(`${path}: ${id} names no rule in docs/spec`);
  if (path !== PROVENANCE)
    for (const source of SOURCES) if (text.includes(source)) problems.push(`${path}: cites ${source}`);
  text.split('\n').forEach((line, i) => {
    for (const [pattern, what] of HISTORY) if (pattern.test(line)) problems.push(`${path}:${i + 1}: ${what}`);
  });
  return problems;
}

function walk(dir: string, out: string[]): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (SCANNED.test(e.name) || p === join(ROOT, '.ci/run')) out.push(p);
  }
  return out;
}

const specFiles = readdirSync(SPEC)
  .filter((n) => n.endsWith('.md'))
  .map((n) => ({ path: `docs/spec/${n}`, text: readFileSync(join(SPEC, n), 'utf8') }));

describe('citations of the specification', () => {
  const { rules, problems } = specRules(specFiles);

  it('docs/spec numbers each rule once, under its own chapter, with a title', () => {
    expect(rules.size).toBeGreaterThan(150);
    expect(problems).toEqual([]);
  });

  it('every spec § citation in code, tests and docs names a rule; nothing cites the sources or the history', () => {
    const files = walk(ROOT, []);
    expect(files.length).toBeGreaterThan(500);
    const found = files.flatMap((f) => problemsIn(relative(ROOT, f), readFileSync(f, 'utf8'), rules));
    expect(found).toEqual([]);
    // The tree does cite the specification, so the check above has something to check.
    expect(files.filter((f) => citations(readFileSync(f, 'utf8')).length > 0).length).toBeGreaterThan(40);
  });

  it('would catch a citation of no rule, a source file, an issue or finding, and a bare section number', () => {
    const known = new Map([
      ['§4.6', 'docs/spec/sessions.md'],
      ['§4.7', 'docs/spec/sessions.md'],
    ]);
    expect(citations('as Spec §4.6, §4.7 and §4.9 say; spec §1.2 to §1.4')).toEqual([
      '§4.6',
      '§4.7',
      '§4.9',
      '§1.2',
      '§1.4',
    ]);
    expect(problemsIn('a.ts', '// refused (spec §4.6, §4.7)', known)).toEqual([]);
    expect(problemsIn('a.ts', '// refused (spec §4.6 to §4.8)', known)).toEqual([
      'a.ts: §4.8 names no rule in docs/spec',
    ]);
    expect(problemsIn('a.md', `see ${SOURCES[1]}`, known)).toEqual([`a.md: cites ${SOURCES[1]}`]);
    expect(problemsIn(PROVENANCE, `written from ${SOURCES[0]}`, known)).toEqual([]);
    const history = ['Iss', 'ue 28, fin', 'ding 4'].join('');
    expect(problemsIn('b.test.ts', `it('${history}')`, known)).toEqual([
      'b.test.ts:1: cites an issue',
      'b.test.ts:1: cites a finding',
    ]);
    expect(problemsIn('c.ts', `// (${'contr'}act 3.2, ${'ru'}le 8.7)`, known)).toHaveLength(2);
    expect(problemsIn('docs/spec/x.md', 'see §4.7 and §9.1; RFC 8949 §4.2.1', known)).toEqual([
      'docs/spec/x.md: §9.1 names no rule in docs/spec',
    ]);
  });

  it('would catch a duplicate, a misplaced and an untitled rule', () => {
    const { problems: p } = specRules([
      { path: 'docs/spec/a.md', text: '# §3 A\n\n## §3.1 One\n\n## §3.1 Again\n\n## §4.1 Elsewhere\n\n## §3.2\n' },
    ]);
    expect(p).toEqual([
      'docs/spec/a.md: §3.1 is also defined in docs/spec/a.md',
      'docs/spec/a.md: §4.1 sits in chapter §3',
      'docs/spec/a.md: §3.2 has no title',
    ]);
  });
});
