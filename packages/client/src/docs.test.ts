import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Every name the package exports carries TSDoc, read the way an editor reads it: through the
// type checker, following re-exports to the declaration (the core's own docs count for what is
// re-exported from it).
describe('@strongroom/client exports', () => {
  it('are all documented', { timeout: 90_000 }, () => {
    const entry = fileURLToPath(new URL('./index.ts', import.meta.url));
    const program = ts.createProgram([entry], {
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    });
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(entry)!;
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
    expect(exports.length).toBeGreaterThan(30);
    const undocumented = exports
      .filter((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        const own = ts.displayPartsToString(symbol.getDocumentationComment(checker));
        const declared = ts.displayPartsToString(target.getDocumentationComment(checker));
        return own.trim() === '' && declared.trim() === '';
      })
      .map((s) => s.getName());
    expect(undocumented).toEqual([]);
  });
});
