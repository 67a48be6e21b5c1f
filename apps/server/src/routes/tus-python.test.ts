import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { call, registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';

/**
 * A second tus client, in another language: tuspy (Debian's python3-tuspy, for Debian's own
 * /usr/bin/python3), unmodified but for the checksum algorithm it announces. It creates an upload
 * on /upload-tus, sends part of it and stops (a process that ends), goes on through a relay that
 * cuts a PATCH midway (tuspy gives up: another process end), and a third process resumes from the
 * offset the server answers to its HEAD. The test finalizes and reads the blob back.
 */

const PYTHON = '/usr/bin/python3';
const CHUNK = 256 * 1024;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Why the test cannot run here, or null. */
function missing(): string | null {
  if (!existsSync(PYTHON)) return `${PYTHON} is missing (Debian's python3, which python3-tuspy installs for)`;
  const r = spawnSync(PYTHON, ['-c', 'import tusclient'], { encoding: 'utf8' });
  return r.status === 0 ? null : `tuspy is missing for ${PYTHON} (apt-get install -y python3-tuspy)`;
}
const skip = missing();
if (skip !== null) console.info(`tuspy tests skipped: ${skip}`);

/**
 * The client: one process, one run. It creates the upload when given no URL (and prints it before
 * any byte goes), or resumes the URL from the offset HEAD answers, then sends chunks up to
 * `stop_at` (0: the whole file) and prints where it stands. tuspy's checksum extension announces
 * sha1 by default; the server takes sha256 only, so the subclass names that.
 */
const SCRIPT = `
import hashlib, json, sys
from tusclient.client import TusClient
from tusclient.uploader import Uploader

class Sha256Uploader(Uploader):
    CHECKSUM_ALGORITHM_PAIR = ("sha256", hashlib.sha256)

endpoint, token, version, path, url, chunk, stop_at = sys.argv[1:8]
client = TusClient(endpoint, headers={"Authorization": "Bearer " + token, "X-Svc-Protocol": version})
uploader = Sha256Uploader(file_path=path, client=client, url=url or None, chunk_size=int(chunk),
                          metadata={"device_id": "phone"}, upload_checksum=True, retries=0)
if not uploader.url:
    uploader.set_url(uploader.create_url())
print(json.dumps({"url": uploader.url, "from": uploader.offset}), flush=True)
try:
    uploader.upload(stop_at=int(stop_at) or None)
except Exception as e:
    print(json.dumps({"offset": uploader.offset, "error": type(e).__name__}), flush=True)
    sys.exit(3)
print(json.dumps({"offset": uploader.offset}), flush=True)
`;

interface Run {
  code: number;
  lines: Record<string, unknown>[];
  stderr: string;
}

function tuspy(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(PYTHON, ['-c', SCRIPT, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines, stderr });
    });
  });
}

/** A TCP relay that cuts the connection once `cutAfter` bytes in all have gone up through it. */
class Relay {
  server: Server | null = null;
  sentUp = 0;
  cutAfter = Number.POSITIVE_INFINITY;
  cuts = 0;
  readonly sockets = new Set<Socket>();
  constructor(private readonly port: number) {}
  async start(): Promise<string> {
    this.server = createServer((down: Socket) => {
      const up = connect(this.port, '127.0.0.1');
      this.sockets.add(down).add(up);
      down.on('data', (data: Buffer) => {
        if (this.sentUp + data.length >= this.cutAfter) {
          const keep = this.cutAfter - this.sentUp;
          this.cutAfter = Number.POSITIVE_INFINITY;
          this.sentUp += keep;
          up.write(data.subarray(0, keep), () => {
            this.cuts++;
            down.destroy();
            up.destroy();
          });
          return;
        }
        this.sentUp += data.length;
        up.write(data);
      });
      up.pipe(down);
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

describe.skipIf(skip !== null)('tuspy (Python, unmodified) against the tus routes', { timeout: 120_000 }, () => {
  let s: TestServer;
  let relay: Relay;
  let relayUrl: string;
  let work: string;
  beforeAll(async () => {
    s = await testServer({ SVC_UPLOAD_TTL_S: '3600' });
    relay = new Relay(Number(new URL(s.baseUrl).port));
    relayUrl = await relay.start();
    work = await mkdtemp(join(tmpdir(), 'sr-tuspy-'));
  });
  afterAll(async () => {
    await relay?.stop();
    await s?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('stops after a chunk, is cut mid-PATCH, resumes from the offset the server holds, and the finalized blob hashes right', async () => {
    const { access_token: token } = await registerUser(s.app);
    const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
    const dir = await call(s.app, 'PUT', '/v1/devices/directory', {
      token,
      cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
    });
    expect(dir.status).toBeLessThan(300);
    const data = new Uint8Array(randomBytes(5 * CHUNK + 4321));
    const file = join(work, 'video.bin');
    await writeFile(file, data);
    const auth = { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION, 'tus-resumable': '1.0.0' };
    const held = async (id: string) =>
      Number((await s.request(`/upload-tus/${id}`, { method: 'HEAD', headers: auth })).headers.get('upload-offset'));

    // One process creates the upload, sends one chunk and ends.
    const first = await tuspy([`${s.baseUrl}/upload-tus`, token, VERSION, file, '', String(CHUNK), String(CHUNK)]);
    expect(first.code, first.stderr).toBe(0);
    const url = String(first.lines[0]!.url);
    const id = url.split('/').pop()!;
    expect(first.lines).toEqual([{ url, from: 0 }, { offset: CHUNK }]);
    expect(await held(id)).toBe(CHUNK);

    // The next goes through the relay, which cuts its connection halfway into its second PATCH's body.
    relay.cutAfter = relay.sentUp + CHUNK + CHUNK / 2;
    const viaRelay = url.replace(s.baseUrl, relayUrl);
    const second = await tuspy([`${relayUrl}/upload-tus`, token, VERSION, file, viaRelay, String(CHUNK), '0']);
    expect(relay.cuts).toBe(1);
    expect(second.code).toBe(3);
    expect(second.lines).toEqual([
      { url: viaRelay, from: CHUNK },
      { offset: 2 * CHUNK, error: 'TusUploadFailed' },
    ]);
    // Nothing of the cut PATCH is kept: the server holds what it acknowledged.
    expect(await held(id)).toBe(2 * CHUNK);

    // A third resumes from the server's offset and sends the rest.
    const third = await tuspy([`${s.baseUrl}/upload-tus`, token, VERSION, file, url, String(CHUNK), '0']);
    expect(third.code, third.stderr).toBe(0);
    expect(third.lines).toEqual([{ url, from: 2 * CHUNK }, { offset: data.length }]);

    const finalized = await s.request(`/upload/${id}/finalize`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ content_hash: sha(data) }),
    });
    expect(finalized.status).toBe(200);
    expect(await finalized.json()).toMatchObject({ state: 'Completed', upload_id: id });
    const back = await s.request(`/v1/blobs/${sha(data)}`, { headers: auth });
    expect(back.status).toBe(200);
    expect(sha(new Uint8Array(await back.arrayBuffer()))).toBe(sha(data));
  });
});
