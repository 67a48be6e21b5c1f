import { sha256Hex, toHex } from '../encoding/bytes.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { Random } from '../ports/random.js';

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/**
 * Bytes the server already holds whole (a metadata edit, a blob fetched from a peer) into the blob
 * store under their content address, through the same stage-then-commit as an upload, so a crash
 * between the two leaves only an unnamed staging object. Answers the content hash.
 */
export async function storeWholeBytes(blobs: BlobStore, random: Random, stagingPrefix: string, bytes: Uint8Array): Promise<string> {
  const contentHash = sha256Hex(bytes);
  const staging = `${stagingPrefix}-${toHex(random.bytes(16))}`;
  await blobs.stage(staging, once(bytes), bytes.length);
  await blobs.commit(staging, contentHash);
  return contentHash;
}
