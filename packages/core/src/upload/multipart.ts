import { ok, refuse, type Result } from '../errors.js';
import type { PartGrant, StoredPart } from '../ports/blob-store.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { DEFAULT_DIRECT_PUT_TTL_S, directPutGrant } from './direct.js';
import { isContentHash } from './machine.js';

/**
 * Large direct uploads in parts (S3 multipart): when an upload takes parts rather than one presigned
 * PUT, how large each part is and how many there are, which part URLs a request may have, and when
 * the parts an upload holds make the whole. The store signs and assembles; the limits are here.
 */

const MiB = 1024 * 1024;

/** The part size and the threshold (SVC_S3_PART_BYTES) by default: a declared size above it goes in parts. */
export const DEFAULT_PART_BYTES = 64 * MiB;
/** S3's smallest part (every part but the last). */
export const MIN_PART_BYTES = 5 * MiB;
/** S3's largest part, and its largest single PUT: the threshold never exceeds it. */
export const MAX_PART_BYTES = 5 * 1024 * MiB;
/** S3's most parts in one multipart upload. */
export const MAX_PARTS = 10_000;
/** The most part URLs one request is signed (a client asks again for the rest). */
export const MAX_PART_URLS = 100;

/**
 * How a direct upload of `declaredSize` bytes travels with the threshold `partBytes`: one PUT up to
 * the threshold; above it, parts of `partBytes` each (the last one shorter), unless that would take
 * more than MAX_PARTS, when the parts grow (in whole MiB) to fit; `none` when even MAX_PARTS parts
 * of MAX_PART_BYTES cannot hold it (the proxied PUT is left). `partBytes` outside
 * MIN_PART_BYTES..MAX_PART_BYTES is brought within it.
 */
export type DirectPlan =
  | { readonly kind: 'single' }
  | { readonly kind: 'parts'; readonly size: number; readonly partSize: number; readonly partCount: number }
  | { readonly kind: 'none' };
export type PartPlan = Extract<DirectPlan, { kind: 'parts' }>;

export function directPlan(declaredSize: number, partBytes: number = DEFAULT_PART_BYTES): DirectPlan {
  const threshold = Math.min(Math.max(Math.floor(partBytes), MIN_PART_BYTES), MAX_PART_BYTES);
  if (declaredSize <= threshold) return { kind: 'single' };
  const fit = Math.ceil(Math.ceil(declaredSize / MAX_PARTS) / MiB) * MiB;
  const partSize = Math.max(threshold, fit);
  if (partSize > MAX_PART_BYTES) return { kind: 'none' };
  return { kind: 'parts', size: declaredSize, partSize, partCount: Math.ceil(declaredSize / partSize) };
}

/** The length of part `partNumber` (1-based) of the plan: `partSize`, the last one what remains. */
export function partLength(plan: PartPlan, partNumber: number): number {
  return partNumber < plan.partCount ? plan.partSize : plan.size - (plan.partCount - 1) * plan.partSize;
}

/** A part a client asks a URL for: its number and the hex SHA-256 of the bytes it will send. */
export interface PartRequest {
  readonly partNumber: number;
  readonly sha256: string;
}

/**
 * The part URLs a request may have for `session` as of `now`: only while it waits for bytes
 * (Pending, as a single direct PUT: directPutGrant), each part within the plan, each once, at most
 * MAX_PART_URLS at a time, each with its exact planned length and the checksum the client
 * announced, living at most `maxTtlS` and never past the session.
 */
export function decidePartGrants(
  session: Pick<UploadSessionRecord, 'state' | 'expiresAt' | 'declaredSize' | 'contentHash'>,
  plan: PartPlan,
  requests: readonly PartRequest[],
  now: number,
  maxTtlS: number = DEFAULT_DIRECT_PUT_TTL_S,
): Result<PartGrant[], 'error.conflict' | 'error.request.invalid'> {
  if (requests.length < 1 || requests.length > MAX_PART_URLS)
    return refuse('error.request.invalid', `Ask for 1 to ${MAX_PART_URLS} parts at a time.`);
  const seen = new Set<number>();
  for (const r of requests) {
    if (!Number.isSafeInteger(r.partNumber) || r.partNumber < 1 || r.partNumber > plan.partCount)
      return refuse('error.request.invalid', `part_number must be from 1 to ${plan.partCount}.`, {
        part_count: plan.partCount,
      });
    if (seen.has(r.partNumber)) return refuse('error.request.invalid', `Part ${r.partNumber} is asked twice.`);
    seen.add(r.partNumber);
    if (!isContentHash(r.sha256)) return refuse('error.request.invalid', 'sha256 must be 64 lowercase hex characters.');
  }
  const grant = directPutGrant(session, now, maxTtlS);
  if (grant === null)
    return refuse('error.conflict', 'Part URLs are only given while the upload session waits for bytes.');
  return ok(
    requests.map((r) => ({
      partNumber: r.partNumber,
      size: partLength(plan, r.partNumber),
      sha256: r.sha256,
      ttlS: grant.ttlS,
    })),
  );
}

/**
 * The parts an upload holds that count: each planned part number once, with exactly its planned
 * length (a store that kept a part cut short, or any other length, holds nothing for that number),
 * in ascending order. Numbers outside the plan are left out.
 */
export function countedParts(plan: PartPlan, stored: readonly StoredPart[]): StoredPart[] {
  const byNumber = new Map<number, StoredPart>();
  for (const p of stored) {
    if (p.partNumber >= 1 && p.partNumber <= plan.partCount && p.size === partLength(plan, p.partNumber))
      byNumber.set(p.partNumber, p);
  }
  return [...byNumber.values()].sort((a, b) => a.partNumber - b.partNumber);
}

/** The planned part numbers the upload does not hold (countedParts), ascending. */
export function missingParts(plan: PartPlan, stored: readonly StoredPart[]): number[] {
  const have = new Set(countedParts(plan, stored).map((p) => p.partNumber));
  const missing: number[] = [];
  for (let n = 1; n <= plan.partCount; n++) if (!have.has(n)) missing.push(n);
  return missing;
}

/**
 * Whether the parts an upload holds may be completed: every planned part, each with its planned
 * length, so the assembled object is exactly the declared size. Otherwise a conflict naming the
 * missing parts (the first MAX_PART_URLS of them), and nothing is completed: the client sends
 * those and finalizes again.
 */
export function decidePartsComplete(
  plan: PartPlan,
  stored: readonly StoredPart[],
): Result<StoredPart[], 'error.conflict'> {
  const missing = missingParts(plan, stored);
  if (missing.length > 0)
    return refuse(
      'error.conflict',
      `${missing.length} of ${plan.partCount} parts have not arrived whole; send them and finalize again.`,
      { missing_parts: missing.slice(0, MAX_PART_URLS), missing_count: missing.length },
    );
  return ok(countedParts(plan, stored));
}
