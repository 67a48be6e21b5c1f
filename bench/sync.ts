import { createHash } from 'node:crypto';
import { api, VERSION } from './lib.js';
import type { Scenario } from './scenarios.js';
import { uploader } from './uploads.js';

/** The library each sync scenario's account holds (BENCH_SYNC_ASSETS, default 1,000: two pages of 500). */
export const SYNC_ASSETS = Number(process.env.BENCH_SYNC_ASSETS ?? 1000);
/** A sync page's limit in the scenarios, and the floor's. */
export const SYNC_PAGE = 500;

/** An account holding `count` finished originals, uploaded through the API 20 at a time; its access token. */
async function library(url: string, label: string, count: number): Promise<string> {
  const token = await uploader(url, label);
  const one = async (i: number) => {
    const bytes = Buffer.from(`${label}-${i}`.padEnd(64, '.'));
    const opened = await api(
      url,
      'POST',
      '/upload',
      { declared_size: bytes.length, kind: 'original', device_id: 'bench' },
      token,
    );
    if (opened.status !== 201) throw new Error(`upload: ${opened.status} ${JSON.stringify(opened.body)}`);
    const id = opened.body.upload_id as string;
    const put = await fetch(`${url}/upload/${id}`, {
      method: 'PUT',
      headers: {
        'x-svc-protocol': VERSION,
        authorization: `Bearer ${token}`,
        'content-type': 'application/octet-stream',
      },
      body: bytes,
    });
    if (put.status !== 200) throw new Error(`put: ${put.status} ${await put.text()}`);
    const done = await api(
      url,
      'POST',
      `/upload/${id}/finalize`,
      { content_hash: createHash('sha256').update(bytes).digest('hex') },
      token,
    );
    if (done.status !== 200) throw new Error(`finalize: ${done.status} ${JSON.stringify(done.body)}`);
  };
  for (let i = 0; i < count; i += 20)
    await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => one(i + j)));
  return token;
}

const get = (url: string, token: string, query: string) => ({
  url: `${url}/v1/sync?${query}`,
  headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION },
});

/** Every cursor of the account's pages of SYNC_PAGE in turn, from none (a new device) to the last page's. */
async function pageStarts(url: string, token: string): Promise<(string | null)[]> {
  const starts: (string | null)[] = [null];
  for (;;) {
    const cursor = starts.at(-1);
    const r = await api(
      url,
      'GET',
      `/v1/sync?limit=${SYNC_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      undefined,
      token,
    );
    if (r.status !== 200) throw new Error(`sync: ${r.status} ${JSON.stringify(r.body)}`);
    starts.push(r.body.cursor);
    if (!r.body.has_more) return starts;
  }
}

/**
 * A new device's first page: SYNC_PAGE changes with their records, from no cursor. In the growth
 * mode's seeded store, the hot account's (100,000 assets, beside 1,000,000 changes across the store).
 */
export const syncFromScratch: Scenario = {
  name: `GET /v1/sync, the first page of ${SYNC_PAGE} (a new device)`,
  warm: true,
  async setup(url, ctx) {
    const token = ctx?.hotToken ?? (await library(url, `bench-sync-scratch-${Date.now()}`, SYNC_ASSETS));
    return {
      load: get(url, token, `limit=${SYNC_PAGE}`),
      async after() {
        const r = await api(url, 'GET', `/v1/sync?limit=${SYNC_PAGE}`, undefined, token);
        return `changes on the page: ${r.body.changes.length}, more: ${r.body.has_more}`;
      },
    };
  },
};

/** A device in step asking what changed since its cursor: nothing did (in the growth mode, the hot account's). */
export const syncFromCursor: Scenario = {
  name: 'GET /v1/sync from a recent cursor (nothing new)',
  warm: true,
  async setup(url, ctx) {
    const token = ctx?.hotToken ?? (await library(url, `bench-sync-cursor-${Date.now()}`, SYNC_ASSETS));
    const cursor = (await pageStarts(url, token)).at(-1)!;
    return { load: get(url, token, `limit=${SYNC_PAGE}&cursor=${encodeURIComponent(cursor)}`) };
  },
};
