/**
 * The floor for moving a blob: the least a server can do to take a body in durably and hand it
 * back on this machine. A bare `node:http` server, no framework, validation, quota, ledger or log:
 *
 * - `PUT /floor/blob/:name` streams the request body into a new file under FLOOR_DIR while hashing
 *   it with SHA-256, fsyncs the file, renames it into place and answers `{size, sha256}`.
 * - `GET /floor/blob/:name` streams the file back (64 KiB reads, as the filesystem store's).
 *
 * What the server adds over it (the session, the staging and commit, the ledger, the routes) is
 * what `npm run bench:blobs` sets beside it, round by round.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';

const DIR = process.env.FLOOR_DIR!;
const NAME = /^\/floor\/blob\/([A-Za-z0-9_-]{1,64})$/;

async function put(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const temp = `${path}.part`;
  const file = await open(temp, 'w', 0o600);
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
      let at = 0;
      while (at < chunk.length) at += (await file.write(chunk, at, chunk.length - at)).bytesWritten;
    }
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  const body = JSON.stringify({ size, sha256: hash.digest('hex') });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function get(res: ServerResponse, path: string): Promise<void> {
  const { size } = await stat(path);
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  createReadStream(path, { highWaterMark: 64 * 1024 }).pipe(res);
}

const server = createServer((req, res) => {
  const m = NAME.exec(req.url ?? '');
  if (req.url === '/floor/ready') return void res.end('ok');
  if (m === null) {
    res.statusCode = 404;
    return void res.end();
  }
  const path = join(DIR, m[1]!);
  const done = req.method === 'PUT' ? put(req, res, path) : get(res, path);
  done.catch((e: unknown) => {
    res.statusCode = 500;
    res.end(String(e));
  });
});
// The bench's connection to the floor idles while the server's side of a round runs (tens of
// seconds on S3): with Node's 5 s default the floor closes it, and a PUT that reuses it just then
// fails with EPIPE on a loaded machine.
server.keepAliveTimeout = 600_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
