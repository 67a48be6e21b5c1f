import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_PATH, SCHEMAS_PATH, TYPES_PATH, documentText, schemasText, typesText } from '../scripts/generate.js';

// The checked-in OpenAPI snapshot and the types generated from it must be what the server's route
// definitions produce today. When this fails: npm run generate -w @strongroom/client, and commit.
describe('generated client types', () => {
  it("are current with the server's OpenAPI document", { timeout: 60_000 }, async () => {
    const document = await documentText();
    expect(
      readFileSync(DOCUMENT_PATH, 'utf8'),
      'packages/client/openapi.json is stale: run npm run generate -w @strongroom/client',
    ).toBe(document);
    expect(
      readFileSync(TYPES_PATH, 'utf8'),
      'packages/client/src/generated/api.ts is stale: run npm run generate -w @strongroom/client',
    ).toBe(await typesText(document));
    expect(
      readFileSync(SCHEMAS_PATH, 'utf8'),
      'packages/client/src/generated/schemas.ts is stale: run npm run generate -w @strongroom/client',
    ).toBe(schemasText(document));
  });
});
