/**
 * The floor for moving a blob: the least a server can do to take a body in durably and hand it
 * back on this machine. A bare `node:http` server, no framework, validation, quota, ledger or log:
 *
 * - `PUT /floor/blob/:name` streams the request body into a new file under FLOOR_DIR while hashing
 *   it with SHA-256, fsyncs the file, renames it into place and answers `{size, sha256}`.
 * - `GET /floor/blob/:name` streams the file back (64 KiB reads, as the filesystem store's).
 *
 * With FLOOR_S3_ENDPOINT and FLOOR_S3_BUCKET (and AWS_* credentials), the same least work with an
 * object store behind it, for the server on S3 to be set beside:
 *
 * - `PUT /floor/s3/:name` streams the body into one PutObject of the request's Content-Length
 *   while hashing it (nothing staged, no multipart upload, no copy to a content address).
 * - `GET /floor/s3/:name` streams the object back as GetObject answers it.
 *
 * What the server adds over it (the session, the staging and commit, the ledger, the routes) is
 * what `npm run bench:blobs` sets beside it, round by round.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

const DIR = process.env.FLOOR_DIR!;
const NAME = /^\/floor\/(blob|s3)\/([A-Za-z0-9_-]{1,64})$/;
const BUCKET = process.env.FLOOR_S3_BUCKET;
// As the server's store is configured: no checksum of the body computed on the way, path-style keys.
const s3 = process.env.FLOOR_S3_ENDPOINT
  ? new S3Client({
      region: 'us-east-1',
      endpoint: process.env.FLOOR_S3_ENDPOINT,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    })
  : null;

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

async function putS3(req: IncomingMessage, res: ServerResponse, key: string): Promise<void> {
  const hash = createHash('sha256');
  let size = 0;
  async function* hashed(): AsyncIterable<Buffer> {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  }
  const command = new PutObjectCommand({
    Bucket: BUCKET,
    Key: key,
    Body: Readable.from(hashed()),
    ContentLength: Number(req.headers['content-length']),
  });
  // The body is streamed, not signed (as the server's store sends it).
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'floorUnsignedPayload' },
  );
  await s3!.send(command);
  const body = JSON.stringify({ size, sha256: hash.digest('hex') });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function getS3(res: ServerResponse, key: string): Promise<void> {
  const object = await s3!.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': object.ContentLength });
  (object.Body as Readable).pipe(res);
}

const server = createServer((req, res) => {
  const m = NAME.exec(req.url ?? '');
  if (req.url === '/floor/ready') return void res.end('ok');
  if (m === null) {
    res.statusCode = 404;
    return void res.end();
  }
  const name = m[2]!;
  const done =
    m[1] === 's3'
      ? req.method === 'PUT'
        ? putS3(req, res, `floor/${name}`)
        : getS3(res, `floor/${name}`)
      : req.method === 'PUT'
        ? put(req, res, join(DIR, name))
        : get(res, join(DIR, name));
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
