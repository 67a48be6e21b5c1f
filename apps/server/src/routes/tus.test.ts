import { createHash, randomBytes } from 'node:crypto';
import { MemoryBlobStore, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { Upload, type HttpRequest } from 'tus-js-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';
import { Maker } from '@strongroom/tests/access';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const b64 = (b: Uint8Array | string): string => Buffer.from(b).toString('base64');
/** Node's fetch takes bytes; the DOM typings disagree. */
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const TUS = { 'tus-resumable': '1.0.0' };

/** Holds a resumable run's body once `bytes` of it arrived, until the test lets it go on (a PATCH cut off mid-body, on cue). */
class GatedBlobStore extends MemoryBlobStore {
  gate: { bytes: number; reached: () => void; release: Promise<void> } | null = null;
  /** Runs being staged now. */
  readonly stagingNow = new Set<string>();
  override async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number) {
    this.stagingNow.add(stagingId);
    try {
      return await this.#stage(stagingId, body, maxBytes);
    } finally {
      this.stagingNow.delete(stagingId);
    }
  }
  #stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number) {
    const gate = stagingId.includes('_') ? this.gate : null;
    if (gate === null) return super.stage(stagingId, body, maxBytes);
    return super.stage(
      stagingId,
      (async function* () {
        let seen = 0;
        for await (const chunk of body) {
          yield chunk;
          seen += chunk.length;
          if (seen >= gate.bytes && gate !== null) {
            gate.reached();
            await gate.release;
          }
        }
      })(),
      maxBytes,
    );
  }
}

let s: TestServer;
let blobs: GatedBlobStore;
beforeEach(async () => {
  blobs = new GatedBlobStore();
  s = await testServer({ SVC_QUOTA_HARD_BYTES: String(64 * 1024 * 1024), SVC_UPLOAD_TTL_S: '3600' }, {}, { blobs });
});
afterEach(async () => {
  await s.close();
});

/** A registered account with a published device directory listing `phone`. */
async function user(): Promise<{ token: string; accountId: string }> {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  const put = await call(s.app, 'PUT', '/v1/devices/directory', {
    token,
    raw: raw(dir),
    contentType: 'application/cbor',
  });
  if (put.status >= 300) throw new Error(`directory: ${put.status} ${JSON.stringify(put.body)}`);
  return { token, accountId };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION });

/** tus creation by hand: the session's id. */
async function create(
  token: string,
  length: number,
  metadata: Record<string, string> = { device_id: 'phone' },
): Promise<string> {
  const r = await s.request('/upload-tus', {
    method: 'POST',
    headers: { ...bearer(token), ...TUS, 'upload-length': String(length), 'upload-metadata': meta(metadata) },
  });
  expect(r.status).toBe(201);
  return r.headers.get('location')!.split('/').pop()!;
}
const meta = (m: Record<string, string>): string =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');
const head = (token: string, id: string) =>
  s.request(`/upload-tus/${id}`, { method: 'HEAD', headers: { ...bearer(token), ...TUS } });
const patch = (
  headers: Record<string, string>,
  id: string,
  offset: number,
  body: BodyInit,
  extra: Record<string, string> = {},
) =>
  s.request(`/upload-tus/${id}`, {
    method: 'PATCH',
    headers: {
      ...headers,
      ...TUS,
      'upload-offset': String(offset),
      'content-type': 'application/offset+octet-stream',
      ...extra,
    },
    body,
    duplex: 'half',
  } as RequestInit);
const finalize = (headers: Record<string, string>, id: string, data: Uint8Array) =>
  s.request(`/upload/${id}/finalize`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ content_hash: sha(data) }),
  });

/** Starts a tus-js-client upload and settles when it succeeds, fails, or `stopAt` bytes were sent (then aborted). */
function tusClient(
  data: Uint8Array,
  options: {
    headers: Record<string, string>;
    endpoint?: string;
    uploadUrl?: string;
    chunkSize?: number;
    metadata?: Record<string, string>;
    stopAt?: number;
  },
): Promise<{ outcome: 'done' | 'aborted'; url: string | null; patchOffsets: number[] }> {
  const patchOffsets: number[] = [];
  return new Promise((resolve, reject) => {
    let stopped = false;
    const upload: Upload = new Upload(Buffer.from(data), {
      endpoint: options.endpoint ?? `${s.baseUrl}/upload-tus`,
      ...(options.uploadUrl ? { uploadUrl: options.uploadUrl } : {}),
      headers: options.headers,
      metadata: options.metadata ?? {},
      chunkSize: options.chunkSize ?? Number.POSITIVE_INFINITY,
      retryDelays: [],
      onBeforeRequest: (req: HttpRequest) => {
        if (req.getMethod() === 'PATCH') patchOffsets.push(Number(req.getHeader('Upload-Offset')));
      },
      onProgress: (sent) => {
        if (options.stopAt !== undefined && !stopped && sent >= options.stopAt) {
          stopped = true;
          void upload.abort().then(() => resolve({ outcome: 'aborted', url: upload.url, patchOffsets }));
        }
      },
      onSuccess: () => resolve({ outcome: 'done', url: upload.url, patchOffsets }),
      onError: (e) => (stopped ? undefined : reject(e)),
    });
    upload.start();
  });
}

/** The server's offset for the upload, once a PATCH cut off midway has settled on its side. */
async function settledOffset(headers: Record<string, string>, id: string): Promise<number> {
  // The server is done with the cut-off PATCH once no run of it is being staged: poll the fake store, no wall clock.
  for (let i = 0; i < 1_000; i++) {
    const r = await s.request(`/upload-tus/${id}`, { method: 'HEAD', headers: { ...headers, ...TUS } });
    const runs = [...blobs.staged.keys()].filter((k) => k.startsWith(`${id}_`)).length;
    const recorded = (await s.deps.stores.segments.listSegments(id)).length;
    if (runs === recorded) return Number(r.headers.get('upload-offset'));
    await new Promise((go) => setImmediate(go));
  }
  throw new Error('the cut-off PATCH never settled');
}

describe('tus-js-client (unmodified) against the listening server', () => {
  it('uploads in chunks, is aborted midway, resumes from the offset the server holds, and finalizes', async () => {
    const a = await user();
    const data = new Uint8Array(randomBytes(300 * 1024));
    const headers = { Authorization: `Bearer ${a.token}`, 'X-Svc-Protocol': VERSION };
    const first = await tusClient(data, {
      headers,
      chunkSize: 64 * 1024,
      metadata: { device_id: 'phone', content_hash: sha(data) },
      stopAt: 150 * 1024,
    });
    expect(first.outcome).toBe('aborted');
    const id = first.url!.split('/').pop()!;
    const held = await settledOffset(bearer(a.token), id);
    // Whole chunks were acknowledged before the abort; the one cut off left nothing.
    expect(held % (64 * 1024)).toBe(0);
    expect(held).toBeGreaterThanOrEqual(128 * 1024);
    expect(held).toBeLessThan(data.length);

    const second = await tusClient(data, { headers, uploadUrl: first.url!, chunkSize: 64 * 1024 });
    expect(second.outcome).toBe('done');
    expect(second.patchOffsets[0]).toBe(held);
    const h = await head(a.token, id);
    expect([h.status, h.headers.get('upload-offset'), h.headers.get('upload-length')]).toEqual([
      200,
      String(data.length),
      String(data.length),
    ]);
    const f = await finalize(bearer(a.token), id, data);
    expect(f.status).toBe(200);
    expect(await f.json()).toMatchObject({ state: 'Completed', upload_id: id });
    const q = await call(s.app, 'GET', '/quota', { token: a.token });
    expect(q.body).toMatchObject({ used: data.length, reserved: 0 });
    const blob = await s.request(`/v1/blobs/${sha(data)}`, { headers: bearer(a.token) });
    expect(sha(new Uint8Array(await blob.arrayBuffer()))).toBe(sha(data));
  });

  it('one PATCH cut off mid-body keeps nothing of it; the resumed upload starts where the server says', async () => {
    const a = await user();
    // Larger than the loopback socket buffers hold, so the body cannot have arrived whole when the connection goes.
    const data = new Uint8Array(randomBytes(32 * 1024 * 1024));
    const headers = { Authorization: `Bearer ${a.token}`, 'X-Svc-Protocol': VERSION };
    let reached!: () => void;
    let release!: () => void;
    const arrived = new Promise<void>((go) => (reached = go));
    blobs.gate = { bytes: 1024 * 1024, reached, release: new Promise<void>((go) => (release = go)) };
    const upload = new Upload(Buffer.from(data), {
      endpoint: `${s.baseUrl}/upload-tus`,
      headers,
      metadata: { device_id: 'phone' },
      retryDelays: [],
      onError: () => undefined,
    });
    upload.start();
    await arrived;
    // The connection goes while the server holds a megabyte of the body: the PATCH never finishes.
    await upload.abort();
    release();
    blobs.gate = null;
    const id = upload.url!.split('/').pop()!;
    expect(await settledOffset(bearer(a.token), id)).toBe(0);
    expect([...blobs.staged.keys()].filter((k) => k.startsWith(id))).toEqual([]);
    const second = await tusClient(data, { headers, uploadUrl: upload.url! });
    expect([second.outcome, second.patchOffsets]).toEqual(['done', [0]]);
    expect((await finalize(bearer(a.token), id, data)).status).toBe(200);
  });

  it("a drop's guest resumes with its upload token, and finalizes", async () => {
    const a = await user();
    const m = new Maker(s.app);
    const linkId = await m.uploadLink({ token: a.token });
    const data = new Uint8Array(randomBytes(200 * 1024));
    const drop = await call(s.app, 'POST', `/v1/links/${linkId}/drops`, { body: { declared_size: data.length } });
    expect(drop.status).toBe(201);
    const id = drop.body.upload_id as string;
    const guest = { Authorization: `Upload ${drop.body.upload_token}`, 'X-Svc-Protocol': VERSION };
    const url = `${s.baseUrl}/upload-tus/${id}`;
    const first = await tusClient(data, { headers: guest, uploadUrl: url, chunkSize: 50 * 1024, stopAt: 100 * 1024 });
    expect(first.outcome).toBe('aborted');
    const offset = await settledOffset(guest, id);
    expect(offset % (50 * 1024)).toBe(0);
    expect(offset).toBeGreaterThan(0);
    const second = await tusClient(data, { headers: guest, uploadUrl: url, chunkSize: 50 * 1024 });
    expect([second.outcome, second.patchOffsets[0]]).toEqual(['done', offset]);
    const f = await finalize({ authorization: guest.Authorization, 'x-svc-protocol': VERSION }, id, data);
    expect(f.status).toBe(200);
    // A guest terminates nothing (as it cancels nothing): its token reaches its one drop, to send.
    expect((await s.request(`/upload-tus/${id}`, { method: 'DELETE', headers: { ...guest, ...TUS } })).status).toBe(
      401,
    );
  });
});

describe('tus bad input: a problem answer, and nothing lost', () => {
  it('an offset that does not match is 409 naming the held offset; a chunk past the declared size is 413; a checksum mismatch is 460; none moves the offset', async () => {
    const a = await user();
    const data = new Uint8Array(randomBytes(1000));
    const id = await create(a.token, data.length);
    const auth = bearer(a.token);
    expect((await patch(auth, id, 0, raw(data.subarray(0, 400)))).status).toBe(204);

    const wrong = await patch(auth, id, 300, raw(data.subarray(300, 500)));
    expect([wrong.status, wrong.headers.get('upload-offset'), wrong.headers.get('tus-resumable')]).toEqual([
      409,
      '400',
      '1.0.0',
    ]);
    expect(await wrong.json()).toMatchObject({ code: 'error.conflict', upload_offset: 400 });
    const ahead = await patch(auth, id, 500, raw(data.subarray(500, 600)));
    expect(ahead.status).toBe(409);

    const past = await patch(auth, id, 400, raw(new Uint8Array(601)));
    expect(past.status).toBe(413);
    expect(await past.json()).toMatchObject({ code: 'error.upload.too_large', declared_size: 1000 });

    const chunk = data.subarray(400, 700);
    const bad = await patch(auth, id, 400, raw(chunk), {
      'upload-checksum': `sha256 ${createHash('sha256').update(data.subarray(0, 300)).digest('base64')}`,
    });
    expect(bad.status).toBe(460);
    expect(await bad.json()).toMatchObject({ code: 'error.upload.checksum_mismatch', status: 460 });
    const otherAlgorithm = await patch(auth, id, 400, raw(chunk), {
      'upload-checksum': `md5 ${createHash('md5').update(chunk).digest('base64')}`,
    });
    expect(otherAlgorithm.status).toBe(400);

    expect((await head(a.token, id)).headers.get('upload-offset')).toBe('400');
    // Nothing of the refused requests stayed staged: only the one acknowledged run.
    expect([...blobs.staged.keys()].filter((k) => k.startsWith(id))).toHaveLength(1);
    const good = await patch(auth, id, 400, raw(chunk), {
      'upload-checksum': `sha256 ${createHash('sha256').update(chunk).digest('base64')}`,
    });
    expect([good.status, good.headers.get('upload-offset')]).toEqual([204, '700']);
    expect((await patch(auth, id, 700, raw(data.subarray(700)))).headers.get('upload-offset')).toBe('1000');
    expect((await finalize(auth, id, data)).status).toBe(200);
  });

  it('a client whose last PATCH went unanswered but landed is told, at its next PATCH, that every byte is in: 409 naming the full offset', async () => {
    const a = await user();
    const auth = bearer(a.token);
    const data = new Uint8Array(randomBytes(10));
    const id = await create(a.token, 10);
    expect((await patch(auth, id, 0, raw(data.subarray(0, 3)))).status).toBe(204);
    // The rest lands, but the client never hears so (a dropped connection, a killed server)...
    expect((await patch(auth, id, 3, raw(data.subarray(3)))).status).toBe(204);
    // ... and sends it again from the offset it last knew.
    const again = await patch(auth, id, 3, raw(data.subarray(3)));
    expect(again.status).toBe(409);
    expect(again.headers.get('upload-offset')).toBe('10');
    expect(await again.json()).toMatchObject({
      code: 'error.conflict',
      state: 'WaitingForProcessing',
      upload_offset: 10,
    });
    expect((await finalize(auth, id, data)).status).toBe(200);
  });

  it('a PATCH to a finalized or cancelled session is 409, and the cancelled one answers HEAD 404', async () => {
    const a = await user();
    const auth = bearer(a.token);
    const data = new Uint8Array(randomBytes(10));
    const done = await create(a.token, 10);
    expect((await patch(auth, done, 0, raw(data))).status).toBe(204);
    expect((await finalize(auth, done, data)).status).toBe(200);
    const late = await patch(auth, done, 10, raw(new Uint8Array(0)));
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ code: 'error.conflict', state: 'Completed' });
    expect((await head(a.token, done)).headers.get('upload-offset')).toBe('10');

    const gone = await create(a.token, 10);
    expect((await patch(auth, gone, 0, raw(data.subarray(0, 4)))).status).toBe(204);
    const terminated = await s.request(`/upload-tus/${gone}`, { method: 'DELETE', headers: { ...auth, ...TUS } });
    expect([terminated.status, terminated.headers.get('tus-resumable')]).toEqual([204, '1.0.0']);
    expect((await call(s.app, 'GET', '/quota', { token: a.token })).body).toMatchObject({ reserved: 0 });
    expect((await patch(auth, gone, 4, raw(data.subarray(4)))).status).toBe(409);
    expect((await head(a.token, gone)).status).toBe(404);
    expect((await s.request(`/upload-tus/${gone}`, { method: 'DELETE', headers: { ...auth, ...TUS } })).status).toBe(
      409,
    );
  });

  it("two PATCHes racing at one offset: one wins, the other is 409, and the bytes are the winner's alone", async () => {
    const a = await user();
    const auth = bearer(a.token);
    const id = await create(a.token, 2000);
    // The first PATCH sends half its body and waits; the second comes and goes meanwhile.
    let more!: () => void;
    const held = new Promise<void>((go) => (more = go));
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(500).fill(1));
        await held;
        controller.enqueue(new Uint8Array(500).fill(1));
        controller.close();
      },
    });
    const first = patch(auth, id, 0, slow);
    for (
      let i = 0;
      i < 1_000 && ![...blobs.staged.keys(), ...blobs.stagingNow].some((k) => k.startsWith(`${id}_`));
      i++
    )
      await new Promise((go) => setImmediate(go));
    const fast = new Uint8Array(800).fill(2);
    const second = await patch(auth, id, 0, raw(fast));
    expect([second.status, second.headers.get('upload-offset')]).toEqual([204, '800']);
    more();
    const lost = await first;
    expect([lost.status, lost.headers.get('upload-offset')]).toEqual([409, '800']);
    const rest = new Uint8Array(1200).fill(3);
    expect((await patch(auth, id, 800, raw(rest))).status).toBe(204);
    const whole = new Uint8Array([...fast, ...rest]);
    expect(sha(blobs.staged.get(id)!)).toBe(sha(whole));
    expect((await finalize(auth, id, whole)).status).toBe(200);
  });

  it('refuses requests a tus server must refuse: no Tus-Resumable (412), another content type (415), a missing offset, bad metadata', async () => {
    const a = await user();
    const auth = bearer(a.token);
    const id = await create(a.token, 10);
    const noVersion = await s.request(`/upload-tus/${id}`, {
      method: 'PATCH',
      headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: raw(new Uint8Array(3)),
    });
    expect([noVersion.status, noVersion.headers.get('tus-version')]).toEqual([412, '1.0.0']);
    expect(
      (await patch(auth, id, 0, raw(new Uint8Array(3)), { 'content-type': 'application/octet-stream' })).status,
    ).toBe(415);
    const noOffset = await s.request(`/upload-tus/${id}`, {
      method: 'PATCH',
      headers: { ...auth, ...TUS, 'content-type': 'application/offset+octet-stream' },
      body: raw(new Uint8Array(3)),
    });
    expect(noOffset.status).toBe(400);
    const creation = (headers: Record<string, string>) =>
      s.request('/upload-tus', { method: 'POST', headers: { ...auth, ...TUS, ...headers } });
    expect(
      (
        await creation({
          'upload-length': '10',
          'upload-metadata': `device_id ${b64('phone')},filename ${b64('holiday.mp4')}`,
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await creation({
          'upload-length': '10',
          'upload-metadata': `device_id ${b64('phone')},device_id ${b64('phone')}`,
        })
      ).status,
    ).toBe(400);
    expect((await creation({ 'upload-length': '10', 'upload-metadata': 'device_id !!!!' })).status).toBe(400);
    expect((await creation({ 'upload-length': '0', 'upload-metadata': meta({ device_id: 'phone' }) })).status).toBe(
      400,
    );
    expect((await creation({ 'upload-length': '1e3', 'upload-metadata': meta({ device_id: 'phone' }) })).status).toBe(
      400,
    );
    expect(
      (await creation({ 'upload-defer-length': '1', 'upload-metadata': meta({ device_id: 'phone' }) })).status,
    ).toBe(400);
    expect((await creation({ 'upload-length': '10' })).status).toBe(400);
    const options = await s.request('/upload-tus', { method: 'OPTIONS', headers: { 'x-svc-protocol': VERSION } });
    expect([
      options.status,
      options.headers.get('tus-version'),
      options.headers.get('tus-extension'),
      options.headers.get('tus-checksum-algorithm'),
    ]).toEqual([204, '1.0.0', 'creation,termination,checksum,expiration', 'sha256']);
  });
});

describe('tus creation decides quota exactly as POST /upload', () => {
  it('the same answers and the same reservations, opening for opening, over a table of sizes, devices, kinds and albums', async () => {
    const small = await testServer({
      SVC_QUOTA_HARD_BYTES: '1000',
      SVC_MAX_OPEN_UPLOADS: '4',
      SVC_FEDERATION_PEERS: 'https://peer.example',
    });
    try {
      const accounts = async () => {
        const make = async () => {
          const u = await registerUser(small.app);
          const accountId = (await call(small.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body
            .account_id as string;
          const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
          expect(
            (
              await call(small.app, 'PUT', '/v1/devices/directory', {
                token: u.access_token,
                raw: raw(dir),
                contentType: 'application/cbor',
              })
            ).status,
          ).toBe(200);
          return u.access_token;
        };
        return [await make(), await make()] as const;
      };
      const [json, tus] = await accounts();
      const h = 'ab'.repeat(32);
      const table: Record<string, string>[] = [
        { declared_size: '600' },
        { declared_size: '401' },
        { declared_size: '400' },
        { declared_size: '1' },
        { declared_size: '1', device_id: 'stranger' },
        { declared_size: '1', kind: 'federated', content_hash: h, source_peer: 'https://elsewhere.example' },
        { declared_size: '1', kind: 'thumbnail' },
        { declared_size: '1', album_id: '0190c000-0000-7000-8000-0000000000ff' },
        { declared_size: '0' },
        { declared_size: '1', content_hash: 'XYZ' },
        { declared_size: '1' },
        { declared_size: '1' },
      ];
      for (const row of table) {
        const { declared_size: size, ...fields } = row;
        const body: Record<string, unknown> = {
          device_id: 'phone',
          kind: 'original',
          declared_size: Number(size),
          ...fields,
        };
        const viaJson = await call(small.app, 'POST', '/upload', { token: json, body });
        const viaTus = await fetch(`${small.baseUrl}/upload-tus`, {
          method: 'POST',
          headers: {
            ...bearer(tus),
            ...TUS,
            'upload-length': size!,
            'upload-metadata': meta({ device_id: 'phone', kind: 'original', ...fields }),
          },
        });
        const tusBody = (await viaTus.json()) as { code?: string; state?: string };
        expect([viaTus.status, tusBody.code ?? tusBody.state], JSON.stringify(row)).toEqual([
          viaJson.status,
          viaJson.body.code ?? viaJson.body.state,
        ]);
        const [qj, qt] = await Promise.all([
          call(small.app, 'GET', '/quota', { token: json }),
          call(small.app, 'GET', '/quota', { token: tus }),
        ]);
        expect(qt.body.reserved, JSON.stringify(row)).toBe(qj.body.reserved);
      }
    } finally {
      await small.close();
    }
  });
});
