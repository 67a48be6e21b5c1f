import { CoreError } from '../errors.js';
import { sha256Hex, toHex } from '../encoding/bytes.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { Random } from '../ports/random.js';
import { releaseStaging, type LedgerHolds } from './handoff.js';

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/**
 * Bytes the server already holds whole (a metadata edit, a blob fetched from a peer) into the blob
 * store under their content address, through the same stage-then-commit as an upload, so a crash
 * between the two leaves only an unnamed staging object. `record` writes the ledger row that names
 * them; the staged bytes are kept until it has, then released as an upload's are (handoff.ts), so
 * a sweep racing the write cannot take the bytes from under the row. Answers the content hash and
 * what `record` answered.
 */
export async function storeWholeBytes<T>(
  blobs: BlobStore,
  random: Random,
  holds: LedgerHolds,
  stagingPrefix: string,
  bytes: Uint8Array,
  record: (contentHash: string) => Promise<T>,
): Promise<{ contentHash: string; recorded: T }> {
  const contentHash = sha256Hex(bytes);
  const staging = `${stagingPrefix}-${toHex(random.bytes(16))}`;
  await blobs.stage(staging, once(bytes), bytes.length);
  let recorded: T;
  try {
    const committed = await blobs.commit(staging, contentHash);
    if (committed !== 'stored')
      throw new CoreError(
        'error.internal',
        `blob store: whole bytes staged as ${staging} could not be committed (${committed})`,
      );
    recorded = await record(contentHash);
  } catch (cause) {
    // The ledger write may have landed before it failed: its row's bytes are kept all the same.
    await releaseStaging(blobs, holds, staging, contentHash).catch(() => undefined);
    throw cause;
  }
  await releaseStaging(blobs, holds, staging, contentHash);
  return { contentHash, recorded };
}
