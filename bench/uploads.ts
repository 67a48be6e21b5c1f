import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { api, register, VERSION } from './lib.js';
import type { Scenario } from './scenarios.js';

/** A registered account with a published device directory, ready to open upload sessions. */
export async function uploader(url: string, label: string): Promise<string> {
  return (await uploaderAccount(url, label)).token;
}

/** The same, with the account's id (the growth mode seeds rows that belong to it). */
export async function uploaderAccount(url: string, label: string): Promise<{ token: string; accountId: string }> {
  const u = await register(url, `${label}@example.org`);
  const me = await api(url, 'GET', '/v1/auth/profile', undefined, u.access_token);
  const accountId = me.body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('bench')]);
  const r = await fetch(`${url}/v1/devices/directory`, {
    method: 'PUT',
    headers: {
      'x-svc-protocol': VERSION,
      authorization: `Bearer ${u.access_token}`,
      'content-type': 'application/cbor',
    },
    body: dir.slice() as Uint8Array<ArrayBuffer>,
  });
  if (r.status >= 300) throw new Error(`directory: ${r.status} ${await r.text()}`);
  return { token: u.access_token, accountId };
}

export const body = JSON.stringify({ declared_size: 1024, kind: 'original', device_id: 'bench' });

/** Upload-session creations for one account: 50 clients contending on one ledger row. */
export const uploadsOneAccount: Scenario = {
  name: 'POST /upload, one account, 50 concurrent clients',
  warm: false,
  async setup(url, ctx) {
    // In the growth mode the hot account is the one the seeded upload sessions belong to.
    const token = ctx?.hotToken ?? (await uploader(url, `bench-upload-one-${Date.now()}`));
    return {
      load: {
        url: `${url}/upload`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION, authorization: `Bearer ${token}` },
        body,
        connections: 50,
      },
      async after() {
        const q = await api(url, 'GET', '/quota', undefined, token);
        return `reserved after run: ${q.body.reserved} bytes`;
      },
    };
  },
};

/** Upload-session creations spread over 1,000 accounts (each request names the next account). */
export const uploadsManyAccounts: Scenario = {
  name: 'POST /upload, 1,000 accounts, 50 concurrent clients',
  warm: false,
  async setup(url) {
    const stamp = Date.now();
    const tokens: string[] = [];
    for (let i = 0; i < 1000; i += 25) {
      tokens.push(
        ...(await Promise.all(Array.from({ length: 25 }, (_, j) => uploader(url, `bench-upload-${stamp}-${i + j}`)))),
      );
    }
    return {
      load: {
        url: `${url}/upload`,
        connections: 50,
        requests: tokens.map((t) => ({
          method: 'POST',
          path: '/upload',
          headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION, authorization: `Bearer ${t}` },
          body,
        })),
      },
    };
  },
};
