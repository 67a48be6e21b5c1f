import { mayActForAccount, mayReach, type AccessAction, type Accessor } from '../access/rules.js';
import { isUuid, uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AssetCatalog } from '../ports/asset-catalog.js';
import { assetObject } from '../assets/service.js';
import type { Arrived, BlobStore, DirectPut, MultipartStaging, StoredPart } from '../ports/blob-store.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type {
  BlobKind,
  CompleteUpload,
  NewUpload,
  OpenRefusal,
  UploadKind,
  UploadSessionRecord,
  UploadSessions,
  UploadState,
} from '../ports/upload-sessions.js';
import { decideSourcePeer } from '../peer-blob-cache/rules.js';
import type { AlbumWriteRefusal, WriteGuard, WriteRefusal } from '../ports/write-guard.js';
import { albumOfAsset } from '../albums/asset-album.js';
import type { QuotaService } from '../quota/service.js';
import { decideArrival, decideStored, DEFAULT_DIRECT_PUT_TTL_S, directPutGrant } from './direct.js';
import {
  countedParts,
  decidePartGrants,
  decidePartsComplete,
  directPlan,
  missingParts,
  type PartPlan,
  type PartRequest,
} from './multipart.js';
import { segmentOwner, takesSegments } from './resumable.js';
import {
  decideCancel,
  decideFinalize,
  decidePut,
  isContentHash,
  isFinalized,
  isInFlight,
  uploadState,
} from './machine.js';

export interface UploadServiceDeps {
  readonly sessions: UploadSessions;
  readonly assets: AssetCatalog;
  readonly blobs: BlobStore;
  readonly quota: QuotaService;
  readonly writeGuard: WriteGuard;
  readonly clock: Clock;
  readonly random: Random;
  /** How long a session may stay open (SVC_UPLOAD_TTL_S). */
  readonly ttlMs: number;
  /** How long a finalized web-upload drop waits for adoption before it counts as discarded. */
  readonly dropTtlMs: number;
  /** The peers a federated fill may name as its source (SVC_FEDERATION_PEERS). */
  readonly federationPeers: readonly string[];
  /** The longest a direct upload URL lives (SVC_S3_PUT_URL_S); direct.ts DEFAULT_DIRECT_PUT_TTL_S when unset. */
  readonly directPutTtlS?: number;
  /**
   * The part size and threshold of direct uploads in parts (SVC_S3_PART_BYTES); multipart.ts
   * DEFAULT_PART_BYTES when unset.
   */
  readonly partBytes?: number;
}

export const BLOB_KINDS: readonly BlobKind[] = ['original', 'derivative', 'metadata', 'provenance'];

/** Deployment defaults for upload lifetimes (the server overrides the session TTL from SVC_UPLOAD_TTL_S). */
export const DEFAULT_UPLOAD_POLICY: { readonly ttlMs: number; readonly dropTtlMs: number } = {
  ttlMs: 86_400_000,
  /** A finalized web-upload drop waits this long for adoption before the sweep frees it. */
  dropTtlMs: 7 * 86_400_000,
};
export const MAX_DECLARED_SIZE = Number.MAX_SAFE_INTEGER;

export interface CreateUpload {
  readonly declaredSize: number;
  readonly kind: UploadKind;
  readonly contentHash: string | null;
  /** kind `federated` only (and required there): the peer the blob came from. */
  readonly sourcePeer?: string | null;
  readonly albumId: string | null;
  readonly intentId: string | null;
  readonly deviceId: string;
  readonly protocolVersion: string;
}

/** What a bytes PUT carries besides the bytes. */
export interface PutUpload {
  /** The request's X-Svc-Protocol version: bytes of a session opened in an album are a write to that album (its pin). */
  readonly protocolVersion: string;
}

export interface FinalizeUpload {
  /**
   * The request's X-Svc-Protocol version: a finalize lands its blob in the session's album, or in
   * the album of the asset it attaches to, so it is a write to that album (its pin).
   */
  readonly protocolVersion: string;
  readonly contentHash: string;
  /** What the server reads of the manifest: the asset a non-original blob belongs to, the intent it names. */
  readonly manifest: { readonly assetId: string | null; readonly intentId: string | null } | null;
}

export interface UploadView {
  readonly uploadId: string;
  readonly state: UploadState;
  readonly expiresAt: number;
  readonly kind: UploadKind;
  readonly declaredSize: number;
  readonly assetId: string | null;
}

/** A direct upload URL and when it stops being accepted. */
export type SignedDirectPut = DirectPut & { readonly expiresAt: number };
/** How a direct upload in parts is cut: every part `partSize` bytes, the last one what remains. */
export interface MultipartOffer {
  readonly partSize: number;
  readonly partCount: number;
}
/**
 * A new session, and how its bytes may go straight to the store: one presigned PUT (`directPut`),
 * or parts (`multipart`: ask their URLs with partUrls); both null: PUT /upload/{id}.
 */
export type CreatedUpload = UploadView & {
  readonly directPut: SignedDirectPut | null;
  readonly multipart: MultipartOffer | null;
};
/** A signed PUT for one part. */
export type SignedPart = SignedDirectPut & { readonly partNumber: number };
/** What a direct upload in parts holds now: the parts that count, and the ones still to send. */
export interface PartsView extends MultipartOffer {
  readonly stored: readonly { readonly partNumber: number; readonly size: number }[];
  readonly missing: readonly number[];
  /** The session's expiry: the parts stay resumable until then. */
  readonly expiresAt: number;
}

type CreateRefusal = WriteRefusal | OpenRefusal | 'error.request.invalid' | 'error.federation.unknown_peer';
type Caller = Accessor & { readonly actingOwnerId?: string | undefined };

const STORE = 'error.store.unavailable' as const;
type FinalizeRefusal =
  | 'error.not_found'
  | 'error.conflict'
  | 'error.request.invalid'
  | 'error.upload.too_large'
  | AlbumWriteRefusal;

function view(s: UploadSessionRecord, now: number): UploadView {
  return {
    uploadId: s.id,
    state: uploadState(s, now),
    expiresAt: s.expiresAt,
    kind: s.kind,
    declaredSize: s.declaredSize,
    assetId: s.assetId,
  };
}

/** `view` of a session just opened, with its direct upload URL. Not a spread of `view`: see ledgerRecordWith in quota/ledger-rules.ts. */
function createdView(
  s: UploadSessionRecord,
  now: number,
  directPut: CreatedUpload['directPut'],
  multipart: CreatedUpload['multipart'],
): CreatedUpload {
  return {
    uploadId: s.id,
    state: uploadState(s, now),
    expiresAt: s.expiresAt,
    kind: s.kind,
    declaredSize: s.declaredSize,
    assetId: s.assetId,
    directPut,
    multipart,
  };
}

/**
 * Upload sessions of every kind (blobs of assets, guest drops, federated fills): the only hard quota
 * enforcement point. Creation reserves the declared size atomically, whatever hash it announces;
 * the declared size caps the bytes; finalize turns the reservation into a charge of the real size,
 * or into a merge when the received bytes are stored already, with no further check; cancel and
 * expiry release it.
 */
export class UploadService {
  readonly #d: UploadServiceDeps;
  /** The last finalize, cancel or staging sweep queued in this process, by session id (#oneAtATime). */
  readonly #inTurn = new Map<string, Promise<unknown>>();
  constructor(deps: UploadServiceDeps) {
    this.#d = deps;
  }

  async create(caller: Caller, input: CreateUpload): Promise<Result<CreatedUpload, CreateRefusal | 'error.not_found'>> {
    if (!mayActForAccount(caller)) return refuse('error.not_found', 'No such account to upload to.');
    const bad = checkCreate(input);
    if (bad) return refuse('error.request.invalid', bad);
    let sourcePeer: string | null = null;
    if (input.kind === 'federated') {
      const peer = decideSourcePeer(input.sourcePeer!, this.#d.federationPeers);
      if (!peer.ok) return peer;
      sourcePeer = peer.value;
    }
    const now = this.#d.clock.now();
    const allowed = await this.#d.writeGuard.checkWrite(
      {
        accountId: caller.accountId,
        deviceAccountId: caller.actingOwnerId,
        deviceId: input.deviceId,
        albumId: input.albumId,
        intentId: input.intentId,
        protocolVersion: input.protocolVersion,
      },
      now,
    );
    if (!allowed.ok) return allowed;
    const request = this.#request(caller.accountId, input, sourcePeer, null, now);
    // Signed before the session is opened, so a store that cannot sign leaves no reservation behind.
    const directPut = await this.#directPut(request, now);
    const opened = await guard(STORE, 'upload session write', () =>
      this.#d.sessions.openUpload(request, this.#d.quota.policy, now),
    );
    return opened.ok
      ? ok(createdView(opened.value, now, directPut, this.multipartOffer(request.declaredSize)))
      : opened;
  }

  /**
   * How a session of `declaredSize` bytes would go in parts on this server, or null when it would
   * not (a store clients cannot reach, or one direct PUT): what a drop's guest is told at opening.
   */
  multipartOffer(declaredSize: number): MultipartOffer | null {
    const plan = this.#partPlan({ declaredSize });
    return plan === null ? null : { partSize: plan.partSize, partCount: plan.partCount };
  }

  /** The store's multipart staging, when a client can send to it directly. */
  #multipart(): MultipartStaging | null {
    const b = this.#d.blobs;
    return b.multipart !== undefined && b.presignPut !== undefined && b.arrived !== undefined ? b.multipart : null;
  }

  /** How a session's bytes go in parts, when they do (multipart.ts directPlan) on a store that takes parts. */
  #partPlan(s: Pick<UploadSessionRecord, 'declaredSize'>): PartPlan | null {
    if (this.#multipart() === null) return null;
    const plan = directPlan(s.declaredSize, this.#d.partBytes);
    return plan.kind === 'parts' ? plan : null;
  }

  /** The direct upload URL for a new session, within core's grant, when the store can sign one. */
  #directPut(request: NewUpload, now: number): Promise<CreatedUpload['directPut']> {
    return this.#sign(
      {
        id: request.id,
        state: 'Pending',
        expiresAt: request.expiresAt,
        declaredSize: request.declaredSize,
        contentHash: request.contentHash,
      },
      now,
    );
  }

  /** A URL within core's grant (direct.ts directPutGrant) for `s` as of `now`; null when the store cannot sign or the grant is none. */
  async #sign(
    s: Pick<UploadSessionRecord, 'id' | 'state' | 'expiresAt' | 'declaredSize' | 'contentHash'>,
    now: number,
  ): Promise<SignedDirectPut | null> {
    const presignPut = this.#d.blobs.presignPut?.bind(this.#d.blobs);
    if (presignPut === undefined || this.#d.blobs.arrived === undefined) return null;
    // Above the threshold the bytes go in parts (or, past what parts hold, through the server).
    if (this.#multipart() !== null && directPlan(s.declaredSize, this.#d.partBytes).kind !== 'single') return null;
    const grant = directPutGrant(s, now, this.#d.directPutTtlS ?? DEFAULT_DIRECT_PUT_TTL_S);
    if (grant === null) return null;
    const signed = await guard(STORE, 'direct upload presign', () => presignPut(s.id, grant));
    return { ...signed, expiresAt: now + grant.ttlS * 1000 };
  }

  /**
   * A fresh direct upload URL for a session still waiting for bytes, to whoever may send them
   * (the same reach as PUT /upload/{id}: the session's account, or its drop's upload token). It
   * lives as long as core's grant allows, never past the session. A store a client cannot reach
   * directly, or a session not Pending, is a conflict.
   */
  async directPut(caller: Caller, id: string): Promise<Result<SignedDirectPut, 'error.not_found' | 'error.conflict'>> {
    const s = await this.#reach(caller, id, 'send');
    if (!s) return refuse('error.not_found', 'No such upload session.');
    if (this.#d.blobs.presignPut === undefined || this.#d.blobs.arrived === undefined) {
      return refuse(
        'error.conflict',
        "This server's blob store takes no direct uploads: send the bytes with PUT /upload/{id}.",
      );
    }
    const now = this.#d.clock.now();
    const state = uploadState(s, now);
    if (this.#partPlan(s) !== null)
      return refuse(
        'error.conflict',
        'This upload is larger than one direct PUT takes: send it in parts (POST /upload/{id}/parts).',
        { state },
      );
    const signed = await this.#sign(s, now);
    return signed === null
      ? refuse(
          'error.conflict',
          `The upload session is ${state}: a direct upload URL is only given while it waits for bytes.`,
          { state },
        )
      : ok(signed);
  }

  /**
   * What a direct upload in parts holds now, so a resumed upload sends only the rest: the parts
   * that count (each whole, at its planned length) and those still missing. For whoever may send
   * the bytes; a conflict when the session does not go in parts, or no longer waits for bytes.
   */
  async parts(caller: Caller, id: string): Promise<Result<PartsView, 'error.not_found' | 'error.conflict'>> {
    const found = await this.#partsSession(caller, id);
    if (!found.ok) return found;
    const { s, plan, multipart } = found.value;
    const held: readonly StoredPart[] = (await guard(STORE, 'multipart listing', () => multipart.parts(id))) ?? [];
    return ok({
      partSize: plan.partSize,
      partCount: plan.partCount,
      stored: countedParts(plan, held).map((p) => ({ partNumber: p.partNumber, size: p.size })),
      missing: missingParts(plan, held),
      expiresAt: s.expiresAt,
    });
  }

  /**
   * Presigned PUTs for parts of a direct upload in parts, each pinned to its planned length and
   * the SHA-256 the client announces for it (multipart.ts decidePartGrants), living at most
   * SVC_S3_PUT_URL_S and never past the session. The store opens the upload's multipart upload
   * at the first request. Sending a part again replaces it.
   */
  async partUrls(
    caller: Caller,
    id: string,
    requests: readonly PartRequest[],
  ): Promise<Result<SignedPart[], 'error.not_found' | 'error.conflict' | 'error.request.invalid'>> {
    const found = await this.#partsSession(caller, id);
    if (!found.ok) return found;
    const { s, plan, multipart } = found.value;
    const now = this.#d.clock.now();
    const grants = decidePartGrants(s, plan, requests, now, this.#d.directPutTtlS ?? DEFAULT_DIRECT_PUT_TTL_S);
    if (!grants.ok) return grants;
    const signed = await guard(STORE, 'part presign', () => multipart.presignParts(id, grants.value));
    return ok(
      signed.map((put, i) => {
        const grant = grants.value[i]!;
        return { ...put, partNumber: grant.partNumber, expiresAt: now + grant.ttlS * 1000 };
      }),
    );
  }

  /** The session, its part plan and the store's multipart staging, for whoever may send its bytes. */
  async #partsSession(
    caller: Caller,
    id: string,
  ): Promise<
    Result<
      { s: UploadSessionRecord; plan: PartPlan; multipart: MultipartStaging },
      'error.not_found' | 'error.conflict'
    >
  > {
    const s = await this.#reach(caller, id, 'send');
    if (!s) return refuse('error.not_found', 'No such upload session.');
    const multipart = this.#multipart();
    const plan = this.#partPlan(s);
    if (multipart === null || plan === null)
      return refuse(
        'error.conflict',
        multipart === null
          ? "This server's blob store takes no direct uploads in parts: send the bytes with PUT /upload/{id}."
          : 'This upload does not go in parts: use its direct PUT (POST /upload/{id}/direct-put) or PUT /upload/{id}.',
      );
    const state = uploadState(s, this.#d.clock.now());
    if (state !== 'Pending')
      return refuse(
        'error.conflict',
        `The upload session is ${state}: parts are only taken while it waits for bytes.`,
        {
          state,
        },
      );
    return ok({ s, plan, multipart });
  }

  /**
   * A guest's web-upload drop through the link stored under `linkIdHash`: charged to the link owner at creation, within the
   * link's cap, and recorded with its token's hash, all in one transaction; finalized into a
   * pending drop that waits for adoption. No device check: the link's creation was the write; the
   * caller has passed the album guard. The session targets the link's album, so an open drop counts
   * as in flight for the album's upgrade quiescence.
   */
  async openDrop(
    linkOwnerId: string,
    linkIdHash: string,
    input: { declaredSize: number; contentHash: string | null; albumId: string | null },
    tokenHash: string,
  ): Promise<Result<UploadView, CreateRefusal>> {
    const full: CreateUpload = { ...input, kind: 'original', intentId: null, deviceId: '', protocolVersion: '' };
    const bad = checkCreate(full);
    if (bad) return refuse('error.request.invalid', bad);
    const now = this.#d.clock.now();
    const request = { ...this.#request(linkOwnerId, full, null, linkIdHash, now), dropLinkIdHash: linkIdHash };
    const opened = await guard(STORE, 'upload session write', () =>
      this.#d.sessions.openDrop(request, tokenHash, this.#d.quota.policy, now),
    );
    return opened.ok ? ok(view(opened.value, now)) : opened;
  }

  #request(
    uploaderId: string,
    input: CreateUpload,
    sourcePeer: string | null,
    dropLinkIdHash: string | null,
    now: number,
  ): NewUpload {
    return {
      id: uuidv7(now, this.#d.random.bytes(10)),
      uploaderId,
      kind: input.kind,
      declaredSize: input.declaredSize,
      contentHash: input.contentHash,
      sourcePeer,
      albumId: input.albumId,
      intentId: input.intentId,
      dropLinkIdHash,
      createdAt: now,
      expiresAt: now + this.#d.ttlMs,
    };
  }

  /**
   * Revokes one of the caller's links; its drops still uploading are cancelled in the same
   * transaction (their reservations released), and their staged bytes let go.
   */
  async revokeLink(ownerId: string, linkIdHash: string): Promise<boolean> {
    const done = await guard(STORE, 'link write', () =>
      this.#d.sessions.revokeLink(ownerId, linkIdHash, this.#d.quota.policy, this.#d.clock.now()),
    );
    for (const id of done.cancelled) await this.#d.blobs.discard(id);
    return done.revoked;
  }

  /** The session if the caller may do `action` on it (access/rules.ts), else null: 404 either way. */
  async #reach(caller: Caller, id: string, action: AccessAction): Promise<UploadSessionRecord | null> {
    const s = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(id));
    return s && mayReach(caller, uploadObject(s), action) ? s : null;
  }

  async get(caller: Caller, id: string): Promise<Result<UploadView, 'error.not_found'>> {
    const s = await this.#reach(caller, id, 'read');
    return s ? ok(view(s, this.#d.clock.now())) : refuse('error.not_found', 'No such upload session.');
  }

  /**
   * Receives the bytes: at most the declared size, else nothing is kept. Bytes of a session opened
   * in an album are a write to it: the album's pin holds for this request too.
   */
  async put(
    caller: Caller,
    id: string,
    body: AsyncIterable<Uint8Array>,
    input: PutUpload,
  ): Promise<
    Result<
      UploadView,
      'error.not_found' | 'error.conflict' | 'error.upload.too_large' | 'error.protocol.below_album_pin'
    >
  > {
    const s = await this.#reach(caller, id, 'send');
    if (!s) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    const allowed = decidePut(s, now);
    if (!allowed.ok) return allowed;
    if (s.albumId !== null) {
      const pinned = await this.#d.writeGuard.checkInFlightWrite({
        albumId: s.albumId,
        protocolVersion: input.protocolVersion,
      });
      if (!pinned.ok) return pinned;
    }
    if (!(await guard(STORE, 'upload session write', () => this.#d.sessions.markUploading(id, now))))
      return refuse('error.conflict', 'The upload session is no longer open.');
    let staged: Arrived;
    try {
      staged = (await this.#d.blobs.stage(id, body, s.declaredSize)) ?? 'too_large';
    } catch (cause) {
      await this.#d.sessions.markReceived(id, null, this.#d.clock.now());
      throw cause;
    }
    const after = this.#d.clock.now();
    const received = await this.#record(s, staged, null, after);
    if (!received.ok) return received;
    return ok(view({ ...s, state: 'WaitingForProcessing' }, after));
  }

  /**
   * Records what arrived for session `s` once core accepts it (direct.ts decideArrival); on a
   * refusal nothing stays staged and the session waits for bytes again. Nothing is charged here.
   */
  async #record(
    s: UploadSessionRecord,
    arrived: Arrived,
    claimed: string | null,
    now: number,
  ): Promise<Result<UploadSessionRecord, 'error.conflict' | 'error.upload.too_large'>> {
    const id = s.id;
    const accepted = decideArrival(s, arrived, claimed);
    if (!accepted.ok) {
      if (arrived !== 'nothing') await this.#d.blobs.discard(id);
      await guard(STORE, 'upload session write', () => this.#d.sessions.markReceived(id, null, now));
      return accepted;
    }
    const { size, sha256 } = accepted.value;
    const marked = await guard(STORE, 'upload session write', () =>
      this.#d.sessions.markReceived(id, { size, hash: sha256 }, now),
    );
    if (!marked) {
      await this.#d.blobs.discard(id);
      return refuse('error.conflict', 'The upload session closed while the bytes were arriving.');
    }
    return ok({ ...s, state: 'WaitingForProcessing', receivedSize: size, receivedHash: sha256 });
  }

  /**
   * A session still waiting for bytes at finalize, on a store a client can send to directly: what
   * arrived there is checked (size within the declared size, SHA-256 equal to the announced hash
   * and to the hash finalized with) and recorded like a proxied PUT, before anything is committed.
   */
  async #arrive(
    s: UploadSessionRecord,
    contentHash: string,
    now: number,
  ): Promise<Result<UploadSessionRecord, 'error.conflict' | 'error.upload.too_large'>> {
    const arrivedIn = this.#d.blobs.arrived?.bind(this.#d.blobs);
    if (arrivedIn === undefined || uploadState(s, now) !== 'Pending') return ok(s);
    if (!(await guard(STORE, 'upload session write', () => this.#d.sessions.markUploading(s.id, now))))
      return refuse('error.conflict', 'The upload session is no longer open.');
    let arrived: Arrived;
    try {
      const assembled = await this.#assemble(s);
      if (!assembled.ok) {
        await guard(STORE, 'upload session write', () =>
          this.#d.sessions.markReceived(s.id, null, this.#d.clock.now()),
        );
        return assembled;
      }
      arrived = await arrivedIn(s.id, s.declaredSize);
    } catch (cause) {
      await this.#d.sessions.markReceived(s.id, null, this.#d.clock.now());
      throw cause;
    }
    return this.#record(s, arrived, contentHash, this.#d.clock.now());
  }

  /**
   * For a session that goes in parts: completes its multipart upload into the staged object once
   * every planned part is there whole (multipart.ts decidePartsComplete); a part missing is a
   * conflict naming it, and the parts stay for the client to finish. No multipart upload open is
   * nothing to do here (a finalize that completed it already, or none begun): what is staged is
   * then checked as any direct upload.
   */
  async #assemble(s: UploadSessionRecord): Promise<Result<void, 'error.conflict'>> {
    const multipart = this.#multipart();
    const plan = this.#partPlan(s);
    if (multipart === null || plan === null) return ok(undefined);
    const held = await guard(STORE, 'multipart listing', () => multipart.parts(s.id));
    if (held === null) return ok(undefined);
    const whole = decidePartsComplete(plan, held);
    if (!whole.ok) return whole;
    await guard(STORE, 'multipart completion', () => multipart.complete(s.id, whole.value));
    return ok(undefined);
  }

  /** The session as stored when it was finalized with these bytes already, else null. */
  async #finalizedAs(id: string, contentHash: string, now: number): Promise<UploadSessionRecord | null> {
    const after = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(id));
    const again = after === null ? null : decideFinalize(after, contentHash, now);
    return again?.ok && again.value.done ? after : null;
  }

  /**
   * Commits the bytes under their hash and the charge (or merge) to the ledger. No quota check
   * here. Idempotent: finalizes of one session run one after another in this process, so a second
   * one finds the first's outcome and answers with it.
   */
  finalize(caller: Caller, id: string, input: FinalizeUpload): Promise<Result<UploadView, FinalizeRefusal>> {
    return this.#oneAtATime(id, () => this.#finalize(caller, id, input));
  }

  /**
   * Finalizes and cancels of one session run one after another in this process. A cancel that
   * slipped in between a finalize's commit of the bytes and its ledger write would leave those
   * bytes stored and charged to no one; in turn, whichever comes second sees the first's outcome.
   */
  #oneAtATime<T>(id: string, task: () => Promise<T>): Promise<T> {
    const before = this.#inTurn.get(id) ?? Promise.resolve();
    const run = before.then(task, task);
    this.#inTurn.set(id, run);
    const clear = () => {
      if (this.#inTurn.get(id) === run) this.#inTurn.delete(id);
    };
    run.then(clear, clear);
    return run;
  }

  async #finalize(caller: Caller, id: string, input: FinalizeUpload): Promise<Result<UploadView, FinalizeRefusal>> {
    if (!isContentHash(input.contentHash))
      return refuse('error.request.invalid', 'content_hash must be 64 lowercase hex characters.');
    const found = await this.#reach(caller, id, 'send');
    if (!found) return refuse('error.not_found', 'No such upload session.');
    if (found.albumId !== null) {
      // Before the bytes sent straight to the store are recorded: they are this album's write too.
      const pinned = await this.#d.writeGuard.checkInFlightWrite({
        albumId: found.albumId,
        protocolVersion: input.protocolVersion,
      });
      if (!pinned.ok) return pinned;
    }
    const now = this.#d.clock.now();
    const arrived = await this.#arrive(found, input.contentHash, now);
    if (!arrived.ok) return arrived;
    const s = arrived.value;
    const decided = decideFinalize(s, input.contentHash, now);
    if (!decided.ok) return decided;
    if (decided.value.done) return ok(view(s, now));
    const manifestIntentId = input.manifest?.intentId ?? null;
    // The album the blob lands in: the session's, or, for a blob attached to an asset, the asset's.
    let albumId = s.albumId;
    let asset: CompleteUpload['asset'];
    if (s.kind === 'federated') {
      asset = null;
    } else if (s.kind === 'original') {
      asset = {
        create: {
          id: s.id,
          ownerId: s.uploaderId,
          dropExpiresAt: s.dropLinkIdHash === null ? null : now + this.#d.dropTtlMs,
        },
      };
    } else {
      const target = input.manifest?.assetId ?? null;
      if (target === null) return refuse('error.request.invalid', `A ${s.kind} blob needs manifest.asset_id.`);
      const a = await guard(STORE, 'asset read', () => this.#d.assets.findAsset(target));
      if (!a || !mayReach(caller, assetObject(a), 'write')) return refuse('error.not_found', 'No such asset.');
      asset = { attachTo: target };
      const into = await guard(STORE, 'upload session read', () => albumOfAsset(this.#d.sessions, target));
      if (into !== null && albumId !== null && into !== albumId)
        return refuse('error.conflict', "The upload names another album than its asset's.");
      if (into !== null && albumId === null) {
        // Opened without naming the album, so its creation passed no album guard and it is not
        // counted in flight: the album's pin and quiescence are checked now, before it lands.
        const gate = await this.#d.writeGuard.checkAlbumWrite(
          {
            accountId: caller.accountId,
            albumId: into,
            intentId: manifestIntentId,
            protocolVersion: input.protocolVersion,
          },
          now,
        );
        if (!gate.ok) return gate;
        albumId = into;
      }
    }
    const intent = await this.#d.writeGuard.checkFinalize(
      { accountId: caller.accountId, albumId, manifestIntentId },
      now,
    );
    if (!intent.ok) return intent;
    let committed = await this.#d.blobs.commit(id, input.contentHash);
    // Nothing staged, yet these bytes (which this session received) are at their address: a
    // finalize of this session in another process committed them and let its staging go first.
    // The ledger's transaction decides which of the two charges (it waits for the other's lock);
    // this one then answers as that one did, so racing finalizes all get the same 200.
    if (committed === 'missing' && (await this.#d.blobs.has(input.contentHash))) committed = 'stored';
    if (committed !== 'stored') {
      // Already settled (a finalize that won while this one read), or bytes of another hash.
      const settled = await this.#finalizedAs(id, input.contentHash, now);
      return settled
        ? ok(view(settled, now))
        : refuse('error.conflict', `The received bytes could not be committed (${committed}).`);
    }
    // Looked at again before anything is charged: the blob may have been moved aside meanwhile,
    // and a store that left a blob of another size there must not have it charged (direct.ts).
    const lookBack = () => guard(STORE, 'blob stat', () => this.#d.blobs.stat(input.contentHash));
    let stored = decideStored(await lookBack(), decided.value.size);
    // Absent: a sweep moved it aside meanwhile (blobs/handoff.ts); the staged bytes are still there.
    if (stored === 'taken' && (await this.#d.blobs.commit(id, input.contentHash)) === 'stored')
      stored = decideStored(await lookBack(), decided.value.size);
    if (stored === 'other') {
      return refuse(
        'error.conflict',
        'The blob store holds a blob of another size at the address than the bytes received; nothing was charged.',
      );
    }
    // The commit left the staged bytes in place: they are let go only after the ledger write,
    // once the blob is seen at its address (a sweep racing this finalize may have quarantined it:
    // blobs/handoff.ts). A session left open (asset_missing, or a failed write) keeps them.
    const outcome = await guard(STORE, 'upload session write', () =>
      this.#d.sessions.completeUpload(
        { uploadId: id, contentHash: input.contentHash, size: decided.value.size, asset },
        this.#d.quota.policy,
        now,
      ),
    );
    if (outcome === 'asset_missing') return refuse('error.not_found', 'No such asset.');
    if (outcome === 'not_open') {
      // Decided once per session (by the store): another finalize of these bytes won, and this one answers as it did.
      const settled = await this.#finalizedAs(id, input.contentHash, now);
      if (settled) await this.#d.quota.releaseStaging(id, input.contentHash);
      return settled ? ok(view(settled, now)) : refuse('error.conflict', 'The upload session is no longer open.');
    }
    await this.#d.quota.releaseStaging(id, input.contentHash);
    return ok(view(outcome.session, now));
  }

  /**
   * The sweep's part in staging: staged bytes that no session in flight holds any more are
   * discarded. A session that lapsed is expired, and its reservation released, wherever the store
   * first notices (a quota read or an opening as well as the sweep), and only the sweep's own
   * expiries discarded their bytes; a direct PUT through a presigned URL may also land after its
   * session was cancelled, finalized or expired. Only upload ids are judged: other staging ids are
   * whole-blob writes in flight (a metadata replace, a federated cache). A finalized session's
   * bytes go as its finalize would have let them go (a finalize in another process may be between
   * its ledger write and its check of the blob's address): the blob is made sure of at its address
   * first (blobs/handoff.ts). Returns how many went.
   */
  async sweepStaging(): Promise<number> {
    let discarded = 0;
    for await (const id of this.#d.blobs.listStaged()) {
      // A resumable upload's run: needed only while its session takes runs (once the runs are
      // assembled, or the session is over, the run's bytes are nobody's).
      const owner = segmentOwner(id);
      if (owner !== null) {
        const s = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(owner));
        if (s === null || !takesSegments(s, this.#d.clock.now())) {
          await this.#d.blobs.discard(id);
          discarded++;
        }
        continue;
      }
      if (!isUuid(id)) continue;
      // In turn with a finalize or cancel of the same session in this process.
      const gone = await this.#oneAtATime(id, async () => {
        const s = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(id));
        if (s !== null && isInFlight(s, this.#d.clock.now())) return false;
        if (s !== null && isFinalized(s) && s.receivedHash !== null)
          await this.#d.quota.releaseStaging(id, s.receivedHash);
        else await this.#d.blobs.discard(id);
        return true;
      });
      if (gone) discarded++;
    }
    const multipart = this.#d.blobs.multipart;
    if (multipart !== undefined) {
      for await (const id of multipart.listOpen()) {
        // Parts of an upload session (a direct upload in parts, or a proxied PUT's own staging):
        // kept while the session is open, aborted once it is not. Other ids are whole-blob writes
        // in flight, left alone (a bucket's lifecycle rule ends those a crash left).
        if (!isUuid(id)) continue;
        const s = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(id));
        if (s !== null && isInFlight(s, this.#d.clock.now())) continue;
        await multipart.abort(id);
        discarded++;
      }
    }
    return discarded;
  }

  cancel(caller: Caller, id: string): Promise<Result<UploadView, 'error.not_found' | 'error.conflict'>> {
    return this.#oneAtATime(id, () => this.#cancel(caller, id));
  }

  async #cancel(caller: Caller, id: string): Promise<Result<UploadView, 'error.not_found' | 'error.conflict'>> {
    const s = await this.#reach(caller, id, 'write');
    if (!s) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    const allowed = decideCancel(s, now);
    if (!allowed.ok) return allowed;
    if (
      !(await guard(STORE, 'upload session write', () => this.#d.sessions.cancelUpload(id, this.#d.quota.policy, now)))
    ) {
      return refuse('error.conflict', 'The upload session is no longer open.');
    }
    await this.#d.blobs.discard(id);
    await this.#d.blobs.multipart?.abort(id);
    return ok(view({ ...s, state: 'Cancelled' }, now));
  }
}

/** An upload session as the access rule sees it: it belongs to the account it uploads into. */
const uploadObject = (s: UploadSessionRecord) => ({ kind: 'upload' as const, id: s.id, accountId: s.uploaderId });

function checkCreate(input: CreateUpload): string | null {
  if (!Number.isSafeInteger(input.declaredSize) || input.declaredSize < 1)
    return 'declared_size must be a whole number from 1 to 2^53-1.';
  if (input.kind === 'federated') {
    if (input.sourcePeer == null || input.contentHash === null)
      return 'A federated blob needs source_peer and content_hash.';
    if (input.albumId !== null || input.intentId !== null) return 'A federated blob takes no album_id or intent_id.';
  } else if (input.sourcePeer != null) {
    return 'source_peer belongs to kind "federated" only.';
  }
  if (input.kind !== 'federated' && !BLOB_KINDS.includes(input.kind))
    return 'kind must be original, derivative, metadata, provenance or federated.';
  if (input.contentHash !== null && !isContentHash(input.contentHash))
    return 'content_hash must be 64 lowercase hex characters.';
  return null;
}
