import { concatBytes, sha256Hex } from '../encoding/bytes.js';
import type { BlobStore, StagedBlob } from '../ports/blob-store.js';

/** In-memory content-addressed blob store with the same staging rules as the filesystem one. */
export class MemoryBlobStore implements BlobStore {
  readonly staged = new Map<string, Uint8Array>();
  readonly blobs = new Map<string, Uint8Array>();

  async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null> {
    this.staged.delete(stagingId);
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > maxBytes) return null;
      parts.push(chunk);
    }
    const all = concatBytes(...parts);
    this.staged.set(stagingId, all);
    return { size, sha256: sha256Hex(all) };
  }
  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const bytes = this.staged.get(stagingId);
    if (!bytes) return 'missing';
    if (sha256Hex(bytes) !== contentHash) return 'hash_mismatch';
    this.staged.delete(stagingId);
    if (!this.blobs.has(contentHash)) this.blobs.set(contentHash, bytes);
    return 'stored';
  }
  async discard(stagingId: string): Promise<void> {
    this.staged.delete(stagingId);
  }
  async has(contentHash: string): Promise<boolean> {
    return this.blobs.has(contentHash);
  }
  async read(contentHash: string): Promise<Uint8Array | null> {
    return this.blobs.get(contentHash) ?? null;
  }
  async remove(contentHash: string): Promise<void> {
    this.blobs.delete(contentHash);
  }
  async stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null> {
    const bytes = this.blobs.get(contentHash);
    if (!bytes) return null;
    return (async function* () {
      yield bytes;
    })();
  }
  readonly backupMode = 'copy';
}
