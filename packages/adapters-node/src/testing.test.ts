import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_KEY, startTestS3, type TestS3 } from './testing.js';

describe('the test S3 server (s3rver, as the suites run it)', { timeout: 60_000 }, () => {
  let s3: TestS3;
  let client: S3Client;
  beforeAll(async () => {
    s3 = await startTestS3();
    client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3RVER_KEY,
      // Every refusal counted, none hidden by the SDK's own retry.
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  it('takes many deletes under one prefix at once, as S3 does: none is refused', async () => {
    const refused: string[] = [];
    for (let round = 0; round < 60; round++) {
      const keys = Array.from({ length: 20 }, (_, i) => `p/received/${round}-${i}`);
      await Promise.all(
        keys.map((Key) => client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body: new Uint8Array(16) }))),
      );
      const deleted = await Promise.allSettled(
        keys.map((Key) => client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key }))),
      );
      for (const d of deleted) if (d.status === 'rejected') refused.push(String(d.reason));
    }
    expect(refused).toEqual([]);
    expect(await s3.keys('p/')).toEqual([]);
  });

  it('answers reads of a key while it is written again, as S3 does: the old object or the new, whole', async () => {
    const Key = 'p/rewritten';
    const refused: string[] = [];
    // An answer that never ends is counted too, after a few seconds.
    const bounded = () => ({ abortSignal: AbortSignal.timeout(5_000) });
    const whole = (bytes: Uint8Array) => bytes.length === 4096 && bytes.every((b) => b === bytes[0]);
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body: new Uint8Array(4096) }));
    for (let round = 1; round <= 100; round++) {
      const settled = await Promise.allSettled([
        client.send(
          new PutObjectCommand({ Bucket: s3.bucket, Key, Body: new Uint8Array(4096).fill(round) }),
          bounded(),
        ),
        client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key }), bounded()),
        client
          .send(new GetObjectCommand({ Bucket: s3.bucket, Key }), bounded())
          .then((o) => o.Body!.transformToByteArray())
          .then((bytes) => {
            if (!whole(bytes)) throw new Error(`a GET answered ${bytes.length} bytes of mixed objects`);
          }),
        client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key }), bounded()),
      ]);
      for (const d of settled) if (d.status === 'rejected') refused.push(`round ${round}: ${String(d.reason)}`);
    }
    expect(refused).toEqual([]);
  });

  // A listing sent as `/bucket?...`, as the S3 store sends it (s3rver refuses the SDK's `/bucket/`).
  const listing = (Prefix: string): ListObjectsV2Command => {
    const command = new ListObjectsV2Command({ Bucket: s3.bucket, Prefix });
    command.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { path?: string };
        if (request.path === `/${s3.bucket}/`) request.path = `/${s3.bucket}`;
        return next(args);
      },
      { step: 'build', name: 'bucketPath' },
    );
    return command;
  };

  it('lists a prefix while a key under it goes, as S3 does: never a 500', async () => {
    for (let i = 0; i < 3; i++)
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `l/received/${i}`, Body: new Uint8Array(16) }));
    // The moment of the race, made certain: the folder's read names a key whose files are gone by the
    // time each name is looked at (a delete finishing between the two).
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    const readdirSync = fs.readdirSync;
    let raced = 0;
    fs.readdirSync = ((path: string, ...rest: unknown[]) => {
      const names = (readdirSync as (...a: unknown[]) => string[])(path, ...rest);
      if (raced === 0 && String(path).endsWith('/l/received')) {
        raced++;
        return [...names, 'gone._S3rver_object'];
      }
      return names;
    }) as typeof fs.readdirSync;
    try {
      const listed = await client.send(listing('l/received/'));
      expect(raced).toBe(1);
      expect((listed.Contents ?? []).map((o) => o.Key)).toEqual(['l/received/0', 'l/received/1', 'l/received/2']);
    } finally {
      fs.readdirSync = readdirSync;
    }
  });
});
