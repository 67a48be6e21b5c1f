#!/usr/bin/env node
// Relative links in the Markdown that .ci/run lints (README.md, docs/, package READMEs): every
// link to a file must name one that exists, and every #fragment a heading of its target (GitHub's
// anchors). Links with a scheme (https:, mailto:) are not fetched: CI has no business depending on
// other people's servers. Prints one line per broken link and exits 1 if there is any.
//
//   node scripts/check-links.mjs [file.md ...]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The files markdownlint-cli2 is given (.markdownlint-cli2.jsonc): the root's Markdown, docs/, package READMEs. */
function defaultFiles() {
  const files = readdirSync(ROOT).filter((name) => name.endsWith('.md'));
  for (const extra of ['tests/README.md']) if (existsSync(join(ROOT, extra))) files.push(extra);
  if (existsSync(join(ROOT, 'bench')))
    files.push(
      ...readdirSync(join(ROOT, 'bench'))
        .filter((n) => n.endsWith('.md'))
        .map((n) => join('bench', n)),
    );
  const walk = (dir) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) files.push(p);
    }
  };
  if (existsSync(join(ROOT, 'docs'))) walk('docs');
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(ROOT, group))) {
      if (existsSync(join(ROOT, group, name, 'README.md'))) files.push(join(group, name, 'README.md'));
    }
  }
  return files.map((f) => join(ROOT, f));
}

/** Markdown with its fenced code blocks blanked (line numbers kept). */
function withoutFences(text) {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (m) => m.replace(/[^\n]/g, ' '));
}

/** Markdown without its fenced code blocks and inline code spans (links there are not links). */
function prose(text) {
  return withoutFences(text).replace(/`[^`\n]*`/g, (m) => ' '.repeat(m.length));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(markdown) {
  const seen = new Map();
  const anchors = new Set();
  for (const line of withoutFences(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every broken relative link in one file, as "file:line: target: why". */
export function brokenLinks(file) {
  const text = prose(readFileSync(file, 'utf8'));
  const problems = [];
  const targets = [];
  const lineOf = (index) => text.slice(0, index).split('\n').length;
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    targets.push({ target: m[1], line: lineOf(m.index) });
  for (const m of text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm))
    targets.push({ target: m[1], line: lineOf(m.index) });
  for (const m of text.matchAll(/\b(?:href|src)="([^"]+)"/g)) targets.push({ target: m[1], line: lineOf(m.index) });
  for (const { target, line } of targets) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like
    const [pathPart, fragment] = target.split('#', 2);
    const path = decodeURIComponent(pathPart ?? '');
    const resolved = path === '' ? file : resolve(dirname(file), path);
    const where = `${relative(ROOT, file)}:${line}: ${target}`;
    if (!existsSync(resolved)) {
      problems.push(`${where}: no such file`);
      continue;
    }
    if (
      fragment &&
      statSync(resolved).isFile() &&
      resolved.endsWith('.md') &&
      !anchorsOf(readFileSync(resolved, 'utf8')).has(fragment.toLowerCase())
    ) {
      problems.push(`${where}: no heading with that anchor in ${relative(ROOT, resolved)}`);
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => resolve(f)) : defaultFiles();
  const problems = files.flatMap(brokenLinks);
  for (const p of problems) process.stderr.write(`broken link: ${p}\n`);
  process.stdout.write(`relative links: ${files.length} files checked, ${problems.length} broken\n`);
  process.exit(problems.length ? 1 : 0);
}
