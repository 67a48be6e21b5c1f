import { CoreError, guard, ok, refuse, type Result } from '../errors.js';
import type { AssetCatalog } from '../ports/asset-catalog.js';
import type { BlobStore, ByteRange } from '../ports/blob-store.js';
import type { Clock } from '../ports/clock.js';
import type { LinkStore } from '../ports/link-store.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import { findLinkById } from '../links/link-id.js';
import { isContentHash } from '../upload/machine.js';
import { ledgerHolds, putBackQuarantined, type LedgerHolds } from './handoff.js';
import { BLOB_ANSWER, linkCoversBlob, MAX_PRESIGN_TTL_S, mayReadBlob, type BlobReader } from './rules.js';

export interface BlobReadServiceDeps {
  readonly catalog: AssetCatalog;
  readonly links: LinkStore;
  readonly blobs: BlobStore;
  /** Asked only when a blob is absent at its address: does a quarantined copy of it go back. */
  readonly ledger: Pick<QuotaLedger, 'findBlob'>;
  readonly clock: Clock;
}

/** A blob the caller may read: its size, and how to get its bytes. */
export interface ReadableBlob {
  readonly contentHash: string;
  readonly size: number;
  /** Streams the bytes (or an inclusive range within `size`) from the store. */
  open(range?: ByteRange): Promise<AsyncIterable<Uint8Array>>;
  /**
   * A short-lived URL serving the same bytes (at most MAX_PRESIGN_TTL_S), and when it stops
   * working, when the store can hand one out; else null.
   */
  readonly presign: (() => Promise<PresignedBlob>) | null;
}

/** A URL that serves a blob's bytes to whoever holds it, until `expiresAt`. */
export interface PresignedBlob {
  readonly url: string;
  readonly expiresAt: number;
}

type Missing = 'error.not_found';
const STORE = 'error.store.unavailable' as const;
const NOT_FOUND = 'No such blob.';

/**
 * Reading blobs back. Every path decides with core's rule (rules.ts) over the catalog's facts
 * first, and only then touches the store, so an unknown hash and a refused one look alike (404),
 * and nothing about another account's blobs leaks, not even whether the hash is stored.
 * A blob found absent at its address is first looked for in quarantine, where a sweep that
 * died midway may have left it (blobs/handoff.ts); a blob that is there costs nothing more.
 */
export class BlobReadService {
  readonly #d: BlobReadServiceDeps;
  readonly #holds: LedgerHolds;
  constructor(deps: BlobReadServiceDeps) {
    this.#d = deps;
    this.#holds = ledgerHolds(deps.ledger);
  }

  /** For the account the request acts as (`GET /v1/blobs/{content_hash}`). */
  async forAccount(who: BlobReader, contentHash: string): Promise<Result<ReadableBlob, Missing>> {
    const allowed = async (): Promise<boolean> => {
      if (!isContentHash(contentHash) || who.accountId === '') return false;
      const refs = await guard(STORE, 'blob reference read', () =>
        this.#d.catalog.blobReferences(contentHash, who.accountId),
      );
      return mayReadBlob(who, refs);
    };
    return this.#readable(contentHash, allowed);
  }

  /** For an anonymous holder of share link `linkId` (`GET /v1/links/{link_id}/blobs/{content_hash}`). */
  async forLink(linkId: string, contentHash: string): Promise<Result<ReadableBlob, Missing>> {
    const allowed = async (): Promise<boolean> => {
      if (!isContentHash(contentHash)) return false;
      const link = await guard(STORE, 'link read', () => findLinkById(this.#d.links, linkId));
      if (link === null) return false;
      const refs = await guard(STORE, 'blob reference read', () =>
        this.#d.catalog.blobReferences(contentHash, link.ownerId),
      );
      return linkCoversBlob(link, refs, this.#d.clock.now());
    };
    return this.#readable(contentHash, allowed);
  }

  async #readable(contentHash: string, allowed: () => Promise<boolean>): Promise<Result<ReadableBlob, Missing>> {
    if (!(await allowed())) return refuse('error.not_found', NOT_FOUND);
    const blobs = this.#d.blobs;
    let stat = await guard(STORE, 'blob stat', () => blobs.stat(contentHash));
    if (stat === null && (await this.#putBack(contentHash)))
      stat = await guard(STORE, 'blob stat', () => blobs.stat(contentHash));
    if (stat === null) {
      // Purged and swept since the rule was asked: gone, like any unknown hash. Still referenced
      // but not stored is a lost object: a fault to report, never bytes served as empty.
      if (!(await allowed())) return refuse('error.not_found', NOT_FOUND);
      throw new CoreError('error.internal', `blob ${contentHash} is referenced but missing from the blob store`);
    }
    const presignGet = blobs.presignGet?.bind(blobs);
    return ok({
      contentHash,
      size: stat.size,
      open: async (range?: ByteRange) => {
        let stream = await guard(STORE, 'blob read', () => blobs.read(contentHash, range));
        if (stream === null && (await this.#putBack(contentHash)))
          stream = await guard(STORE, 'blob read', () => blobs.read(contentHash, range));
        if (stream === null)
          throw new CoreError('error.internal', `blob ${contentHash} disappeared from the blob store while being read`);
        return stream;
      },
      presign:
        presignGet === undefined
          ? null
          : async () => {
              const expiresAt = this.#d.clock.now() + MAX_PRESIGN_TTL_S * 1000;
              return {
                url: await guard(STORE, 'blob presign', () => presignGet(contentHash, MAX_PRESIGN_TTL_S, BLOB_ANSWER)),
                expiresAt,
              };
            },
    });
  }

  /** Only for a caller already allowed to read the blob, and only once it was found absent. */
  #putBack(contentHash: string): Promise<boolean> {
    return guard(STORE, 'blob put-back from quarantine', () =>
      putBackQuarantined(this.#d.blobs, this.#holds, contentHash),
    );
  }
}
