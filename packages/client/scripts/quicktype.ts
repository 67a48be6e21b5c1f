/**
 * Types in another language from the server's OpenAPI document, with quicktype (from npm): one type
 * per named schema of `components.schemas` (`type Quota struct` in Go, `data class Quota` in Kotlin),
 * byte counts as 64-bit integers (they are `format: int64` in the document).
 *
 *   node --import tsx packages/client/scripts/quicktype.ts go [openapi.json] > strongroom.go
 *   node --import tsx packages/client/scripts/quicktype.ts kotlin > Strongroom.kt
 *
 * quicktype reads JSON Schema, not OpenAPI: the schemas are handed over as its definitions, every
 * one a top-level type. It makes the types only; the requests are the app's own (or openapi-fetch's).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FetchingJSONSchemaStore, InputData, JSONSchemaInput, quicktype } from 'quicktype-core';

/** A target language by one of quicktype's names for it (`go`, `kotlin`, `swift`, `java`, ...). */
export type Language = NonNullable<Parameters<typeof quicktype>[0]['lang']>;
import { DOCUMENT_PATH } from './generate.js';

export async function quicktypeTypes(
  document: string,
  lang: Language,
  options: Record<string, string> = {},
): Promise<string> {
  const schemas = (JSON.parse(document) as { components: { schemas: Record<string, unknown> } }).components.schemas;
  const definitions = JSON.stringify({ definitions: schemas }).replaceAll('#/components/schemas/', '#/definitions/');
  const input = new JSONSchemaInput(new FetchingJSONSchemaStore());
  await input.addSource({ name: 'Strongroom', schema: definitions, uris: ['#/definitions/'] });
  const inputData = new InputData();
  inputData.addInput(input);
  const result = await quicktype({ inputData, lang, rendererOptions: { 'just-types': 'true', ...options } });
  return `${result.lines.join('\n')}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [lang = 'go', file = DOCUMENT_PATH] = process.argv.slice(2) as [Language?, string?];
  quicktypeTypes(readFileSync(file, 'utf8'), lang, lang === 'go' ? { package: 'strongroom' } : {}).then(
    (text) => process.stdout.write(text),
    (err: unknown) => {
      process.stderr.write(`quicktype failed: ${(err as Error)?.stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
