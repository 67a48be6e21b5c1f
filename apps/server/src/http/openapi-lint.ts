import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The OpenAPI lint that .ci/run runs: the server's own document, as `/openapi.json` serves it,
 * through Redocly CLI (its `recommended` rules, redocly.yaml) and Spectral (`spectral:oas`,
 * .spectral.yaml). Every finding must be listed in docs/api.md's table of accepted warnings, with
 * its reason, and every row of that table must still be found: a new warning fails, and so does a
 * row for one that went away. The table is read from docs/api.md itself, so the list people read
 * is the list the check applies.
 *
 *   node --import tsx apps/server/src/http/openapi-lint.ts      (npm run lint:openapi)
 */

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const API_DOC = join(ROOT, 'docs', 'api.md');
const BEGIN = '<!-- openapi-lint:accepted -->';
const END = '<!-- /openapi-lint:accepted -->';

export interface Finding {
  readonly tool: 'redocly' | 'spectral';
  readonly rule: string;
  /** A JSON pointer into the document, as `#/paths/~1healthz/get/responses`. */
  readonly where: string;
  readonly message: string;
}

export interface Accepted {
  readonly tool: string;
  readonly rule: string;
  readonly where: string;
  readonly reason: string;
}

const keyOf = (f: { tool: string; rule: string; where: string }): string => `${f.tool} ${f.rule} ${f.where}`;
const pointerOf = (path: readonly (string | number)[]): string =>
  `#/${path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/** The document the app serves, as a temporary file (the caller removes its directory). */
export async function emitDocument(dir: string): Promise<string> {
  // The harness lives in @strongroom/tests, which is built on this package: named through a
  // variable, so the server's TypeScript project does not take the harness in.
  const harness: string = '@strongroom/tests';
  const { testServer } = (await import(harness)) as {
    testServer(): Promise<{ app: { request(path: string): Promise<Response> }; close(): Promise<void> }>;
  };
  const server = await testServer();
  try {
    const res = await server.app.request('/openapi.json');
    if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(await res.json(), null, 2));
    return file;
  } finally {
    await server.close();
  }
}

function runTool(bin: string, args: string[]): unknown {
  const r = spawnSync(join(ROOT, 'node_modules', '.bin', bin), args, {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
    // No telemetry or update checks from CI.
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      SCARF_ANALYTICS: 'false',
      NO_COLOR: '1',
    },
  });
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(
      `${bin} ${args.join(' ')} gave no JSON report (exit ${r.status ?? r.signal}): ${r.stderr}${r.stdout}`.slice(
        0,
        4000,
      ),
    );
  }
}

/** Every error and warning both linters report on the document. */
export function lintDocument(file: string): Finding[] {
  const redocly = runTool('redocly', ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json']) as {
    problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
  };
  const spectral = runTool('spectral', [
    'lint',
    file,
    '--ruleset',
    join(ROOT, '.spectral.yaml'),
    '--format',
    'json',
    '--quiet',
  ]) as {
    code: string;
    severity: number;
    message: string;
    path: (string | number)[];
  }[];
  return [
    ...redocly.problems.map(
      (p): Finding => ({ tool: 'redocly', rule: p.ruleId, where: p.location[0]?.pointer ?? '#', message: p.message }),
    ),
    // Spectral severities: 0 error, 1 warning, 2 information, 3 hint.
    ...spectral
      .filter((p) => p.severity <= 1)
      .map((p): Finding => ({ tool: 'spectral', rule: p.code, where: pointerOf(p.path), message: p.message })),
  ];
}

/** The rows of docs/api.md's accepted-warnings table: `| tool | rule | \`where\` | reason |`. */
export function acceptedWarnings(markdown: string): Accepted[] {
  const start = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/api.md has no table between ${BEGIN} and ${END}`);
  const rows = markdown
    .slice(start + BEGIN.length, end)
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2); // the header and its rule
  return rows.map((line) => {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const [tool, rule, where, reason] = cells.map((c) => c.replace(/^`|`$/g, ''));
    if (cells.length !== 4 || !tool || !rule || !where || !reason)
      throw new Error(
        `docs/api.md: a row of the accepted warnings needs a tool, a rule, a place and a reason: ${line}`,
      );
    return { tool, rule, where, reason };
  });
}

/** Findings nobody accepted, and accepted rows no longer found. */
export function compare(
  findings: readonly Finding[],
  accepted: readonly Accepted[],
): { unlisted: Finding[]; stale: Accepted[] } {
  const found = new Set(findings.map(keyOf));
  const listed = new Set(accepted.map(keyOf));
  return {
    unlisted: findings.filter((f) => !listed.has(keyOf(f))),
    stale: accepted.filter((a) => !found.has(keyOf(a))),
  };
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sr-openapi-lint-'));
  try {
    const findings = lintDocument(await emitDocument(dir));
    const { unlisted, stale } = compare(findings, acceptedWarnings(readFileSync(API_DOC, 'utf8')));
    for (const f of unlisted)
      process.stderr.write(`openapi lint: not accepted in docs/api.md: ${f.tool} ${f.rule} ${f.where}: ${f.message}\n`);
    for (const a of stale)
      process.stderr.write(
        `openapi lint: docs/api.md accepts a warning no longer reported (remove its row): ${a.tool} ${a.rule} ${a.where}\n`,
      );
    if (unlisted.length || stale.length) return 1;
    process.stdout.write(
      `openapi lint: ${findings.length} findings of Redocly and Spectral, each accepted in docs/api.md\n`,
    );
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`openapi lint: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
