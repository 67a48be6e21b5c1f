import { expect, it } from 'vitest';
import type { NewUpload, QuotaPolicy } from '@strongroom/core';
import { describeContract } from './registry.js';
import type { Setup } from './accounts-sessions.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const UNLIMITED: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

function upload(uploaderId: string, declaredSize: number): NewUpload {
  return {
    id: id('e000'),
    uploaderId,
    kind: 'original',
    declaredSize,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: 1_000,
    expiresAt: 10_000,
  };
}
const run = (uploadId: string, start: number, length: number, tag = 'a') => ({
  uploadId,
  start,
  length,
  segmentId: `${uploadId}_${start}_${tag}`,
});

export function describeUploadSegmentsContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'upload-segments', 'UploadSegments', () => {
    it('records runs only at the offset reached, within the declared size, while the session takes bytes', async () => {
      const { ports, cleanup } = await setup();
      try {
        const u = upload(id('a000'), 100);
        expect((await ports.quota.openUpload(u, UNLIMITED, 1_000)).ok).toBe(true);
        expect(await ports.segments.listSegments(u.id)).toEqual([]);
        expect(await ports.segments.appendSegment(run(u.id, 10, 5), 1_001)).toBe('offset_moved');
        expect(await ports.segments.appendSegment(run(u.id, 0, 101), 1_001)).toBe('too_large');
        expect(await ports.segments.appendSegment(run(u.id, 0, 40), 1_001)).toEqual({ offset: 40 });
        expect((await ports.quota.findUpload(u.id))?.state).toBe('Uploading');
        // A second run at a start already taken: the offset moved past it.
        expect(await ports.segments.appendSegment(run(u.id, 0, 40, 'b'), 1_002)).toBe('offset_moved');
        expect(await ports.segments.appendSegment(run(u.id, 40, 61), 1_002)).toBe('too_large');
        expect(await ports.segments.appendSegment(run(u.id, 40, 60), 1_002)).toEqual({ offset: 100 });
        expect(await ports.segments.listSegments(u.id)).toEqual([run(u.id, 0, 40), run(u.id, 40, 60)]);
        expect(await ports.segments.appendSegment(run(u.id, 100, 1), 1_003)).toBe('too_large');
        // Past its expiry, or cancelled, a session takes nothing; an unknown one neither.
        const late = upload(id('a000'), 10);
        expect((await ports.quota.openUpload(late, UNLIMITED, 1_000)).ok).toBe(true);
        expect(await ports.segments.appendSegment(run(late.id, 0, 5), 10_000)).toBe('not_open');
        const gone = upload(id('a000'), 10);
        expect((await ports.quota.openUpload(gone, UNLIMITED, 1_000)).ok).toBe(true);
        expect(await ports.quota.cancelUpload(gone.id, UNLIMITED, 1_001)).toBe(true);
        expect(await ports.segments.appendSegment(run(gone.id, 0, 5), 1_002)).toBe('not_open');
        expect(await ports.segments.appendSegment(run(id('e000'), 0, 5), 1_002)).toBe('not_open');
        expect(await ports.segments.listSegments(gone.id)).toEqual([]);
      } finally {
        await cleanup?.();
      }
    });

    it('of appends racing at one offset, exactly one is recorded', async () => {
      const { ports, cleanup } = await setup();
      try {
        const u = upload(id('a000'), 100);
        expect((await ports.quota.openUpload(u, UNLIMITED, 1_000)).ok).toBe(true);
        const tags = ['a', 'b', 'c', 'd', 'e', 'f'];
        const outcomes = await Promise.all(
          tags.map((t, i) =>
            ports.segments.appendSegment(run(u.id, 0, 10 + i, t), 1_001).catch(() => 'failed' as const),
          ),
        );
        const won = outcomes.filter((o) => typeof o !== 'string');
        expect(won).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'offset_moved' || o === 'failed')).toHaveLength(tags.length - 1);
        const kept = await ports.segments.listSegments(u.id);
        expect(kept).toHaveLength(1);
        expect(won[0]).toEqual({ offset: kept[0]!.length });
      } finally {
        await cleanup?.();
      }
    });
  });
}
