import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from '@strongroom/tests';
import type { paths } from './generated/api.js';
import { DeviceKeys, IdentityKey, PROTOCOL_VERSION, StrongroomClient } from './index.js';

/**
 * `GET /v1/devices/directory` through a plain openapi-fetch client over the generated types, as an
 * app that uses only the OpenAPI document would call it. The document declares the answer
 * `application/cbor`, `type: string, format: binary`; openapi-fetch (0.17.0, the newest) never
 * reads the document at run time and parses every success as JSON unless the call says `parseAs`,
 * so no document can spare that option (openapi-ts/openapi-typescript issues 1529 and 2633). This
 * test pins both halves: the bytes come back whole with `parseAs: 'arrayBuffer'`, and without it
 * the call still fails, so the day openapi-fetch starts honouring the media type this test says so
 * and docs/api.md's note can go.
 */

let s: TestServer;
let signed: Uint8Array;
let api: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  s = await testServer();
  const app = new StrongroomClient({ baseUrl: s.baseUrl });
  await app.register('openapi-fetch@example.org', 'correct horse battery staple');
  signed = IdentityKey.generate().signDirectory(app.accountId!, 1, [
    DeviceKeys.generate('phone').entry(Math.floor(s.clock.now() / 1000) - 60),
  ]);
  await app.publishDirectory(signed);
  api = createClient<paths>({
    baseUrl: s.baseUrl,
    headers: { 'X-Svc-Protocol': PROTOCOL_VERSION, authorization: `Bearer ${app.session!.accessToken}` },
  });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

describe('the directory through a generated openapi-fetch client', () => {
  it('comes back byte for byte as the CBOR that was published, read as bytes', async () => {
    const { data, response } = await api.GET('/v1/devices/directory', { parseAs: 'arrayBuffer' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/cbor');
    expect(new Uint8Array(data!)).toEqual(signed);
  });

  it('is parsed as JSON, and fails, without parseAs: the library ignores the declared media type', async () => {
    await expect(api.GET('/v1/devices/directory')).rejects.toThrow(SyntaxError);
  });
});
