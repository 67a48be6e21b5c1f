import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { fetchCall, PASSWORD, type CallOptions, type Reply } from '../harness/http.js';

export const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** A registered account on a running server, with a directory listing `phone`, that uploads over HTTP. */
export interface Uploader {
  readonly token: string;
  /** The session's refresh secret: a test longer than an access token's 15 minutes refreshes with it. */
  readonly sessionToken: string;
  call(method: string, path: string, o?: CallOptions): Promise<Reply>;
  /** An upload session with `data` received: its id. */
  received(data: Uint8Array): Promise<string>;
  /** Finalizes a received upload; expects 200. */
  finalize(id: string, data: Uint8Array): Promise<void>;
}

export async function uploaderOn(url: string, prefix: string): Promise<Uploader> {
  const call = (method: string, path: string, o: CallOptions = {}) => fetchCall(url, method, path, o);
  const r = await call('POST', '/v1/auth/register', {
    body: { address: `${prefix}-${randomBytes(4).toString('hex')}@example.org`, password: PASSWORD },
  });
  expect(r.status).toBe(200);
  const { access_token: token, session_token: sessionToken } = r.body as {
    access_token: string;
    session_token: string;
  };
  const accountId = ((await call('GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
  expect(
    (
      await call('PUT', '/v1/devices/directory', {
        token,
        cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
      })
    ).status,
  ).toBeLessThan(300);
  return {
    token,
    sessionToken,
    call,
    async received(data) {
      const opened = await call('POST', '/upload', {
        token,
        body: { declared_size: data.length, kind: 'original', device_id: 'phone' },
      });
      expect(opened.status).toBe(201);
      const id = (opened.body as { upload_id: string }).upload_id;
      expect(
        (await call('PUT', `/upload/${id}`, { token, raw: data.slice(), contentType: 'application/octet-stream' }))
          .status,
      ).toBe(200);
      return id;
    },
    async finalize(id, data) {
      const done = await call('POST', `/upload/${id}/finalize`, { token, body: { content_hash: sha(data) } });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
    },
  };
}
