/**
 * The public API reports: for each entry point a package publishes, every exported name with its
 * declaration as the TypeScript compiler emits it (bodies and comments dropped), sorted by name, in
 * `<package>/api/<entry>.api.md`. A change to what a package exports, or to the signature of
 * anything it exports, changes the report; `tests/repo/api-report.test.ts` fails until the report
 * is written again with `npm run api:report`, so the change shows up in review.
 *
 *   node --import tsx scripts/api-report.ts           write every report
 *   node --import tsx scripts/api-report.ts --check   exit 1 if a report is out of date
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The packages whose entry points are reported: every entry named in their package.json exports. */
export const REPORTED_PACKAGES = ['packages/core', 'packages/client'] as const;

interface Entry {
  readonly pkg: string;
  readonly name: string;
  /** The export path ('.', './testing'). */
  readonly subpath: string;
  readonly source: string;
  readonly report: string;
}

function entriesOf(pkg: string): Entry[] {
  const manifest = JSON.parse(readFileSync(join(root, pkg, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | Record<string, string>>;
  };
  return Object.entries(manifest.exports)
    .filter(([subpath]) => !subpath.endsWith('.json'))
    .map(([subpath, target]) => {
      const file = typeof target === 'string' ? target : (target['@strongroom/source'] ?? target.types ?? '');
      const slug = subpath === '.' ? 'index' : subpath.slice(2).replaceAll('/', '-');
      return {
        pkg,
        name: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        subpath,
        source: join(root, pkg, file),
        report: join(root, pkg, 'api', `${slug}.api.md`),
      };
    });
}

export function reportedEntries(): Entry[] {
  return REPORTED_PACKAGES.flatMap(entriesOf);
}

function compilerOptions(pkg: string): ts.CompilerOptions {
  const configPath = join(root, pkg, 'tsconfig.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath));
  return {
    ...parsed.options,
    declaration: true,
    emitDeclarationOnly: true,
    noEmit: false,
    composite: false,
    incremental: false,
    declarationMap: false,
    sourceMap: false,
    skipLibCheck: true,
  };
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement))
    return statement.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []));
  const named = statement as ts.Statement & { name?: ts.Node };
  return named.name && ts.isIdentifier(named.name) ? [named.name.text] : [];
}

/** The package folder a source file belongs to (`packages/core`). */
function packageOf(fileName: string): string {
  const rel = relative(root, fileName).replaceAll('\\', '/');
  const [top, name] = rel.split('/');
  return `${top}/${name}`;
}

/**
 * One program per package, holding every reported entry of it; a declaration another package
 * re-exports is emitted by its own package's program (a program emits only files under its root).
 */
class Programs {
  readonly #programs = new Map<string, ts.Program>();
  readonly #emitted = new Map<string, ts.SourceFile>();

  program(pkg: string): ts.Program {
    let program = this.#programs.get(pkg);
    if (!program) {
      const roots = entriesOf(pkg).map((e) => e.source);
      program = ts.createProgram(roots, compilerOptions(pkg));
      this.#programs.set(pkg, program);
    }
    return program;
  }

  /** The emitted declarations of one source file. */
  declarations(fileName: string): ts.SourceFile {
    let dts = this.#emitted.get(fileName);
    if (!dts) {
      const program = this.program(packageOf(fileName));
      const source = program.getSourceFile(fileName);
      let text = '';
      if (source) program.emit(source, (_name, data) => (text = data), undefined, true);
      dts = ts.createSourceFile(`${fileName}.d.ts`, text, ts.ScriptTarget.Latest, true);
      this.#emitted.set(fileName, dts);
    }
    return dts;
  }
}

/** One entry's report: each exported name and the emitted declarations that define it. */
export function renderReport(entry: Entry, programs = new Programs()): string {
  const program = programs.program(entry.pkg);
  const checker = program.getTypeChecker();
  const entryFile = program.getSourceFile(entry.source);
  if (!entryFile) throw new Error(`${entry.source} is not part of its program`);
  const moduleSymbol = checker.getSymbolAtLocation(entryFile);
  if (!moduleSymbol) throw new Error(`${entry.source} exports nothing`);

  const sections: string[] = [];
  const exported = checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.name.localeCompare(b.name));
  for (const symbol of exported) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const sources = [...new Set((target.declarations ?? []).map((d) => d.getSourceFile()))];
    const blocks: string[] = [];
    for (const source of sources) {
      const origin = relative(root, source.fileName).replaceAll('\\', '/');
      if (source.isDeclarationFile) {
        blocks.push(`// from ${origin.replace(/^.*node_modules\//, '')}`);
        continue;
      }
      const dts = programs.declarations(source.fileName);
      const statements = dts.statements.filter((s) => declaredNames(s).includes(target.name));
      if (statements.length === 0) throw new Error(`${target.name}: no declaration emitted from ${origin}`);
      blocks.push(statements.map((s) => printer.printNode(ts.EmitHint.Unspecified, s, dts)).join('\n'));
    }
    const alias = symbol.name === target.name ? '' : ` (${target.name})`;
    sections.push(`### ${symbol.name}${alias}\n\n\`\`\`ts\n${blocks.join('\n')}\n\`\`\``);
  }
  return `# API report: ${entry.name}\n\nGenerated by \`npm run api:report\` from \`${relative(root, entry.source)}\`; do not edit by hand.\n${exported.length} exported names.\n\n${sections.join('\n\n')}\n`;
}

/** Every reported entry with the report as it is checked in (null when missing) and as it should be. */
export function compareReports(): { entry: Entry; current: string | null; expected: string }[] {
  const programs = new Programs();
  return reportedEntries().map((entry) => {
    let current: string | null = null;
    try {
      current = readFileSync(entry.report, 'utf8');
    } catch {
      current = null;
    }
    return { entry, current, expected: renderReport(entry, programs) };
  });
}

function main(): void {
  const check = process.argv.includes('--check');
  let stale = 0;
  const reports = compareReports();
  for (const { entry, current, expected } of reports) {
    if (current === expected) continue;
    if (check) {
      console.error(`${relative(root, entry.report)} is out of date: run npm run api:report`);
      stale++;
    } else {
      mkdirSync(dirname(entry.report), { recursive: true });
      writeFileSync(entry.report, expected);
      console.log(`wrote ${relative(root, entry.report)}`);
    }
  }
  if (check)
    console.log(`checked ${reports.length} reports: ${reports.map((r) => relative(root, r.entry.report)).join(', ')}`);
  if (stale > 0) process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
