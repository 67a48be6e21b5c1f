import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acceptedWarnings, API_DOC, compare, emitDocument, lintDocument } from './openapi-lint.js';

/**
 * The OpenAPI lint of .ci/run fails on a warning docs/api.md does not accept. Shown on the real
 * document with two new faults put in (an operation without a description, a tag without one):
 * both linters run for real, and exactly those two are reported; everything else they find is a
 * row of the table, and no row is stale.
 */

const dir = mkdtempSync(join(tmpdir(), 'sr-openapi-lint-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Doc = {
  paths: Record<string, Record<string, { description?: string }>>;
  tags: { name: string; description?: string }[];
};

describe('the OpenAPI lint', { timeout: 120_000 }, () => {
  it('fails on a new warning, and only on it', async () => {
    const file = await emitDocument(dir);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as Doc;
    delete doc.paths['/quota']!.get!.description;
    const quotaTag = doc.tags.findIndex((t) => t.name === 'quota');
    delete doc.tags[quotaTag]!.description;
    writeFileSync(file, JSON.stringify(doc));

    const { unlisted, stale } = compare(lintDocument(file), acceptedWarnings(readFileSync(API_DOC, 'utf8')));
    expect(stale).toEqual([]);
    expect(unlisted.map((f) => `${f.tool} ${f.rule} ${f.where}`).sort()).toEqual([
      `redocly tag-description #/tags/${quotaTag}/description`,
      'spectral operation-description #/paths/~1quota/get',
    ]);
  });

  it('reads the table docs/api.md shows, and a row that is no longer found is stale', () => {
    const accepted = acceptedWarnings(readFileSync(API_DOC, 'utf8'));
    expect(accepted.length).toBeGreaterThan(0);
    for (const a of accepted) expect(a.reason.length).toBeGreaterThan(10);
    const { unlisted, stale } = compare([], accepted.slice(0, 1));
    expect(unlisted).toEqual([]);
    expect(stale).toEqual(accepted.slice(0, 1));
    expect(() => acceptedWarnings('| tool | rule |\n')).toThrow(/no table/);
  });
});
