import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_KEY, startTestS3, type TestS3 } from './testing.js';

describe('the test S3 server (s3rver, as the suites run it)', () => {
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
});
