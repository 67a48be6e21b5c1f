import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { DOCUMENT_PATH } from '../scripts/generate.js';
import type { ApiPaths, Asset, LinkAssetPage, Quota, SyncChange, SyncPage } from './index.js';

type Json<P extends keyof ApiPaths, M extends 'get', S extends 200> = ApiPaths[P][M] extends {
  responses: Record<S, { content: { 'application/json': infer B } }>;
}
  ? B
  : never;

// The types openapi-typescript makes are the reference's named schemas, and the client exports each
// under its name: an app writes `Quota`, not `paths['/quota']['get']['responses'][200]…`.
describe('the named types', () => {
  it('are the bodies of the operations that answer them (checked by the type checker)', () => {
    expectTypeOf<Json<'/quota', 'get', 200>>().toEqualTypeOf<Quota>();
    expectTypeOf<Json<'/v1/sync', 'get', 200>>().toEqualTypeOf<SyncPage>();
    expectTypeOf<Json<'/v1/assets/{id}', 'get', 200>>().toEqualTypeOf<Asset>();
    expectTypeOf<Json<'/v1/links/{link_id}/assets', 'get', 200>>().toEqualTypeOf<LinkAssetPage>();
    expectTypeOf<SyncPage['changes'][number]>().toEqualTypeOf<SyncChange>();
    expectTypeOf<Quota['used']>().toEqualTypeOf<number>();
    // And the document the types come from refers to them by name.
    const doc = JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8'));
    expect(doc.paths['/quota'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Quota',
    });
    expect(doc.paths['/v1/sync'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/SyncPage',
    });
  });
});
