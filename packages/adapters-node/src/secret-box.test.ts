import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { SecretBox, toBase64url, fromBase64url } from '@strongroom/core';
import { NodeSecretBox } from './secret-box.js';

const random = { bytes: (n: number) => new Uint8Array(randomBytes(n)) };
const key = new Uint8Array(randomBytes(32));
const secret = new TextEncoder().encode('[17,1765000000000,3]');

describe("NodeSecretBox: core's SecretBox on node:crypto", () => {
  const node = new NodeSecretBox({ key, random });
  const web = new SecretBox({ key, random });

  it('opens what the WebCrypto box sealed, and the WebCrypto box opens what it sealed', async () => {
    expect(await node.open(await web.seal(secret, 'ctx'), 'ctx')).toEqual(secret);
    expect(await web.open(await node.seal(secret, 'ctx'), 'ctx')).toEqual(secret);
    expect(await node.open(await node.seal(new Uint8Array(0), 'ctx'), 'ctx')).toEqual(new Uint8Array(0));
  });

  it('refuses another context, another key, an altered byte, and malformed values', async () => {
    const sealed = await node.seal(secret, 'svc-sync-cursor/v1:a');
    expect(await node.open(sealed, 'svc-sync-cursor/v1:b')).toBeNull();
    expect(
      await new NodeSecretBox({ key: new Uint8Array(32), random }).open(sealed, 'svc-sync-cursor/v1:a'),
    ).toBeNull();
    const [v, iv, body] = sealed.split('.') as [string, string, string];
    const bytes = fromBase64url(body)!;
    for (const at of [0, bytes.length - 1]) {
      const altered = new Uint8Array(bytes);
      altered[at]! ^= 1;
      expect(await node.open(`${v}.${iv}.${toBase64url(altered)}`, 'svc-sync-cursor/v1:a')).toBeNull();
    }
    for (const bad of [
      '',
      'v1',
      `v2.${iv}.${body}`,
      `v1.${iv}`,
      `v1.${iv}.${body}.x`,
      `v1.AAAA.${body}`,
      `v1.${iv}.AAAA`,
      `v1.${iv}.!`,
    ])
      expect(await node.open(bad, 'svc-sync-cursor/v1:a')).toBeNull();
  });

  it('draws a fresh IV for every seal', async () => {
    expect(await node.seal(secret, 'ctx')).not.toBe(await node.seal(secret, 'ctx'));
  });
});
