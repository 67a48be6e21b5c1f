import { join } from 'node:path';
import type { BlobStore } from '@strongroom/core';
import { FsBlobStore } from '@strongroom/adapters-node';
import type { Config } from './config.js';

/**
 * The blob store the configuration names, and how to let go of it. The AWS SDK is loaded only for
 * a bucket: a filesystem deployment neither pays its start-up time nor sees its warnings.
 */
export async function openBlobStore(config: Config): Promise<{ blobs: BlobStore; close: () => void }> {
  const c = config.blobStore ?? { kind: 'file' };
  if (c.kind === 'file') return { blobs: new FsBlobStore(join(config.dataDir, 'blobs')), close: () => undefined };
  const { S3BlobStore } = await import('@strongroom/adapters-node/s3');
  const s3 = new S3BlobStore({
    bucket: c.bucket,
    prefix: c.prefix,
    region: c.region,
    forcePathStyle: c.forcePathStyle,
    timeoutMs: c.timeoutMs,
    direct: c.direct,
    spillDir: join(config.dataDir, 's3-parts'),
    ...(c.endpoint === null ? {} : { endpoint: c.endpoint }),
  });
  return { blobs: s3, close: () => s3.close() };
}
