import type { Appended, AppendRefusal, UploadSegment, UploadSegments } from '../ports/upload-segments.js';
import { decideAppend } from '../upload/resumable.js';
import type { MemoryQuotaStore } from './memory-quota-store.js';

/** Resumable uploads' runs in memory, beside the memory upload sessions: the reference implementation of {@link UploadSegments}. */
export class MemoryUploadSegments implements UploadSegments {
  readonly runs = new Map<string, UploadSegment[]>();
  constructor(readonly quota: MemoryQuotaStore) {}

  async listSegments(uploadId: string): Promise<readonly UploadSegment[]> {
    return [...(this.runs.get(uploadId) ?? [])].sort((a, b) => a.start - b.start);
  }

  async appendSegment(segment: UploadSegment, now: number): Promise<Appended | AppendRefusal> {
    // Synchronous from the read to the write: nothing interleaves, as in one transaction.
    const session = this.quota.uploads.get(segment.uploadId) ?? null;
    const runs = this.runs.get(segment.uploadId) ?? [];
    const decided = decideAppend({ session, segments: runs }, segment, now);
    if (typeof decided === 'string') return decided;
    this.runs.set(segment.uploadId, [...runs, segment]);
    if (session !== null && session.state === 'Pending')
      this.quota.uploads.set(session.id, { ...session, state: 'Uploading' });
    return decided;
  }
}
