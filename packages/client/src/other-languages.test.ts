import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_PATH } from '../scripts/generate.js';
import { quicktypeTypes } from '../scripts/quicktype.js';

// A generator for another language, run on the committed document (generated.test.ts keeps it the
// server's): the types it makes carry the reference's names, and byte counts are 64-bit integers,
// not doubles, so a Go or Kotlin app reads a 5 GiB blob's size as it is.

/** The fields of one Go struct: json name to Go type. */
function goStruct(source: string, name: string): Map<string, string> {
  const body = new RegExp(`^type ${name} struct \\{\\n([\\s\\S]*?)^\\}`, 'm').exec(source)?.[1];
  if (body === undefined) throw new Error(`no type ${name} struct`);
  const fields = new Map<string, string>();
  for (const m of body.matchAll(/^\t\w+\s+(\S+)\s+`json:"([^",]+)/gm)) fields.set(m[2]!, m[1]!);
  return fields;
}

describe('quicktype (Go) on the OpenAPI document', () => {
  it('names a type after each schema, with byte counts as int64', { timeout: 60_000 }, async () => {
    const document = readFileSync(DOCUMENT_PATH, 'utf8');
    const go = await quicktypeTypes(document, 'go', { package: 'strongroom' });
    for (const name of ['Quota', 'SyncPage', 'SyncChange', 'Asset', 'AssetBlob', 'Album', 'Link', 'Profile', 'Session'])
      expect(go, name).toMatch(new RegExp(`^type ${name} struct \\{`, 'm'));
    const quota = goStruct(go, 'Quota');
    expect(quota.get('used')).toBe('int64');
    expect(quota.get('reserved')).toBe('int64');
    expect(quota.get('hard_limit')).toBe('*int64');
    expect(goStruct(go, 'AssetBlob').get('size')).toBe('int64');
    expect(goStruct(go, 'SyncPage').get('changes')).toBe('[]SyncChange');
    // Every byte count in every struct.
    const byteFields = [...go.matchAll(/^\t\w+\s+(\S+)\s+`json:"([^",]*(?:bytes|size|offset|_length|_limit)[^",]*)/gm)];
    expect(byteFields.length).toBeGreaterThan(10);
    for (const [, type, json] of byteFields) expect(type, json).toMatch(/^\*?int64$/);
  });
});
