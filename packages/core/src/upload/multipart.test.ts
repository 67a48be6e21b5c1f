import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StoredPart } from '../ports/blob-store.js';
import {
  countedParts,
  DEFAULT_PART_BYTES,
  decidePartGrants,
  decidePartsComplete,
  directPlan,
  MAX_PART_BYTES,
  MAX_PART_URLS,
  MAX_PARTS,
  MIN_PART_BYTES,
  missingParts,
  partLength,
  type PartPlan,
} from './multipart.js';

const MiB = 1024 * 1024;
const HASH = 'b'.repeat(64);
const plan = (size: number, partBytes = 5 * MiB) => directPlan(size, partBytes) as PartPlan;
const stored = (p: PartPlan, numbers: number[]): StoredPart[] =>
  numbers.map((n) => ({ partNumber: n, size: partLength(p, n), etag: `"e${n}"`, checksum: null }));

describe('directPlan', () => {
  it('one PUT up to the threshold (64 MiB by default), parts of the threshold above it', () => {
    expect(directPlan(DEFAULT_PART_BYTES)).toEqual({ kind: 'single' });
    expect(directPlan(DEFAULT_PART_BYTES + 1)).toEqual({
      kind: 'parts',
      size: DEFAULT_PART_BYTES + 1,
      partSize: DEFAULT_PART_BYTES,
      partCount: 2,
    });
    expect(directPlan(12 * MiB, 5 * MiB)).toMatchObject({ partSize: 5 * MiB, partCount: 3 });
  });
  it('parts grow in whole MiB past 10,000 of them, and a size no 10,000 parts of 5 GiB hold has no direct plan', () => {
    const big = 10_000 * 64 * MiB + 1;
    expect(directPlan(big)).toMatchObject({ kind: 'parts', partSize: 65 * MiB, partCount: 9_847 });
    expect(directPlan(MAX_PARTS * MAX_PART_BYTES)).toMatchObject({ partSize: MAX_PART_BYTES, partCount: MAX_PARTS });
    expect(directPlan(MAX_PARTS * MAX_PART_BYTES + 1)).toEqual({ kind: 'none' });
  });
  it("a threshold outside S3's part limits is brought within them", () => {
    expect(directPlan(5 * MiB, 1)).toEqual({ kind: 'single' });
    expect(directPlan(5 * MiB + 1, 1)).toMatchObject({ partSize: MIN_PART_BYTES });
    expect(directPlan(6 * 1024 * MiB, 10 * 1024 * MiB)).toMatchObject({ partSize: MAX_PART_BYTES, partCount: 2 });
  });
  it('property: the parts cover the declared size exactly, within every S3 limit, and parts are used only above the threshold', () => {
    fc.assert(
      fc.property(
        // Sizes around the threshold, around where parts must grow past 10,000, and anything.
        fc.oneof(
          fc.integer({ min: 1, max: 4 * MAX_PART_BYTES }),
          fc.integer({ min: 1, max: 2 * MAX_PARTS * MAX_PART_BYTES }),
          fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        ),
        fc.integer({ min: MIN_PART_BYTES, max: MAX_PART_BYTES }),
        fc.nat(),
        (size, partBytes, pick) => {
          const p = directPlan(size, partBytes);
          if (size <= partBytes) {
            expect(p).toEqual({ kind: 'single' });
            return;
          }
          if (p.kind !== 'parts') {
            expect(p.kind === 'none' && size > MAX_PARTS * MAX_PART_BYTES).toBe(true);
            return;
          }
          expect(p.partCount).toBeLessThanOrEqual(MAX_PARTS);
          expect(p.partCount).toBeGreaterThanOrEqual(2);
          expect(p.partSize).toBeGreaterThanOrEqual(partBytes);
          expect(p.partSize).toBeLessThanOrEqual(MAX_PART_BYTES);
          const last = partLength(p, p.partCount);
          expect(last).toBeGreaterThanOrEqual(1);
          expect(last).toBeLessThanOrEqual(p.partSize);
          expect(p.partSize * (p.partCount - 1) + last).toBe(size);
          // Any part but the last is exactly partSize, so at least S3's 5 MiB.
          const n = 1 + (pick % p.partCount);
          expect(partLength(p, n)).toBe(n === p.partCount ? last : p.partSize);
          expect(partLength(p, n)).toBeGreaterThanOrEqual(n === p.partCount ? 1 : MIN_PART_BYTES);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('decidePartGrants', () => {
  const p = plan(12 * MiB);
  const pending = { state: 'Pending' as const, expiresAt: 100_000, declaredSize: 12 * MiB, contentHash: null };
  it("each asked part with its exact planned length and the announced checksum, living no longer than the session's rest", () => {
    const r = decidePartGrants(
      pending,
      p,
      [
        { partNumber: 3, sha256: HASH },
        { partNumber: 1, sha256: HASH },
      ],
      40_500,
    );
    expect(r).toEqual({
      ok: true,
      value: [
        { partNumber: 3, size: 2 * MiB, sha256: HASH, ttlS: 59 },
        { partNumber: 1, size: 5 * MiB, sha256: HASH, ttlS: 59 },
      ],
    });
  });
  it('refuses a part outside the plan, a part asked twice, a bad checksum, none or too many at once', () => {
    const code = (reqs: { partNumber: number; sha256: string }[]) => {
      const r = decidePartGrants(pending, p, reqs, 0);
      return r.ok ? 'ok' : r.code;
    };
    expect(code([{ partNumber: 0, sha256: HASH }])).toBe('error.request.invalid');
    expect(code([{ partNumber: 4, sha256: HASH }])).toBe('error.request.invalid');
    expect(code([{ partNumber: 1.5, sha256: HASH }])).toBe('error.request.invalid');
    expect(
      code([
        { partNumber: 2, sha256: HASH },
        { partNumber: 2, sha256: HASH },
      ]),
    ).toBe('error.request.invalid');
    expect(code([{ partNumber: 2, sha256: 'B'.repeat(64) }])).toBe('error.request.invalid');
    expect(code([])).toBe('error.request.invalid');
    const many = plan(MAX_PART_URLS * 5 * MiB + 1);
    const all = Array.from({ length: MAX_PART_URLS + 1 }, (_, i) => ({ partNumber: i + 1, sha256: HASH }));
    expect(decidePartGrants({ ...pending, declaredSize: many.size }, many, all, 0).ok).toBe(false);
    expect(decidePartGrants({ ...pending, declaredSize: many.size }, many, all.slice(1), 0).ok).toBe(true);
  });
  it('only while the session waits for bytes: received, finalized, cancelled or expired is a conflict', () => {
    for (const state of ['Uploading', 'WaitingForProcessing', 'Completed', 'Cancelled'] as const) {
      const r = decidePartGrants({ ...pending, state }, p, [{ partNumber: 1, sha256: HASH }], 0);
      expect(r.ok ? 'ok' : r.code).toBe('error.conflict');
    }
    const late = decidePartGrants(pending, p, [{ partNumber: 1, sha256: HASH }], 99_500);
    expect(late.ok ? 'ok' : late.code).toBe('error.conflict');
  });
});

describe('decidePartsComplete', () => {
  const p = plan(12 * MiB);
  it('every planned part at its planned length completes, in part order', () => {
    const r = decidePartsComplete(p, stored(p, [3, 1, 2]));
    expect(r.ok && r.value.map((x) => x.partNumber)).toEqual([1, 2, 3]);
  });
  it('a missing part, or one of another length (cut short), is named and nothing completes', () => {
    const r = decidePartsComplete(p, stored(p, [1, 3]));
    expect(r).toMatchObject({ ok: false, code: 'error.conflict', data: { missing_parts: [2], missing_count: 1 } });
    const short = [...stored(p, [1, 3]), { partNumber: 2, size: 5 * MiB - 1, etag: '"x"', checksum: null }];
    expect(decidePartsComplete(p, short)).toMatchObject({ ok: false, data: { missing_parts: [2] } });
    expect(decidePartsComplete(p, [])).toMatchObject({ ok: false, data: { missing_parts: [1, 2, 3] } });
  });
  it('parts outside the plan are left out, never completed', () => {
    const extra = [...stored(p, [1, 2, 3]), { partNumber: 4, size: 5, etag: '"z"', checksum: null }];
    expect(countedParts(p, extra).map((x) => x.partNumber)).toEqual([1, 2, 3]);
    expect(missingParts(p, extra)).toEqual([]);
  });
});
