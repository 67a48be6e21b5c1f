import { mayActForAccount, mayReach } from '../access/rules.js';
import { constantTimeEqual, fromBase64url, fromHex, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AssetCatalog, AssetRecord } from '../ports/asset-catalog.js';
import type { Clock } from '../ports/clock.js';
import type { DropRecord, LinkKind, LinkRecord, LinkStore } from '../ports/link-store.js';
import type { Random } from '../ports/random.js';
import type { SecretSealer } from '../secrets/secret-box.js';
import type { OpenRefusal, UploadSessionRecord, UploadSessions } from '../ports/upload-sessions.js';
import type { AlbumWriteRefusal, WriteGuard } from '../ports/write-guard.js';
import { albumOfAsset } from '../albums/asset-album.js';
import type { QuotaRefusal } from '../quota/machine.js';
import type { AssetService } from '../assets/service.js';
import type { QuotaService } from '../quota/service.js';
import type { Principal, SessionService } from '../session/service.js';
import { isOpenState, uploadState } from '../upload/machine.js';
import type { UploadService } from '../upload/service.js';
import { findLinkById, LINK_ID_BYTES, linkIdHash, openLinkId, sealClearLinkIds, sealLinkId } from './link-id.js';
import { checkLinkKey, linkStatus, MAX_LINK_ASSETS } from './rules.js';

export interface LinkServiceDeps {
  readonly links: LinkStore;
  readonly sessions: UploadSessions;
  readonly catalog: AssetCatalog;
  readonly uploads: UploadService;
  readonly assets: AssetService;
  readonly quota: QuotaService;
  readonly clock: Clock;
  readonly random: Random;
  /** Seals each link's id under the server key for its owner's listing (the store keeps only its hash). */
  readonly sealer: SecretSealer;
  /** The album guard (pin, quiescence) every link on an album and every drop through one passes. */
  readonly writeGuard: WriteGuard;
  /**
   * An upload link lets guests reserve the owner's quota until it expires, beyond every session of
   * the account: creating one needs a recent credential proof. A share link does not (what it
   * exposes without the master key is ciphertext).
   */
  readonly recentAuth: Pick<SessionService, 'requireRecentAuthentication'>;
}

export interface NewLink {
  readonly kind: LinkKind;
  readonly albumId: string | null;
  readonly assetIds: readonly string[];
  readonly wrappedKey: string | null;
  readonly sealKey: string | null;
  readonly maxBytes: number | null;
  readonly expiresAt: number | null;
  /** The live upgrade intent the creation names (only needed while the link's album quiesces). */
  readonly intentId: string | null;
  /** The request's X-Svc-Protocol version, judged against the album's pin. */
  readonly protocolVersion: string;
}

/** Where a drop stands, for its link's owner. */
export type DropState = 'uploading' | 'ready' | 'adopted' | 'discarded' | 'expired';

export interface DropView {
  readonly uploadId: string;
  readonly declaredSize: number;
  readonly state: DropState;
  readonly createdAt: number;
  /** Until when the upload may be sent (while uploading) or the drop adopted (while ready). */
  readonly expiresAt: number | null;
}

/** A link with its clear id: as its creator, its owner and anyone presenting the id see it. */
export interface Link extends LinkRecord {
  readonly id: string;
}

export interface OpenedDrop {
  readonly uploadId: string;
  readonly uploadToken: string;
  readonly expiresAt: number;
}

type Caller = Pick<Principal, 'accountId' | 'guestUploadId'>;
type Missing = 'error.not_found';
const STORE = 'error.store.unavailable' as const;

/** The hash a drop's upload token is stored under; null when the text cannot be a token of ours. */
export function uploadTokenHash(token: string): string | null {
  const bytes = fromBase64url(token);
  return bytes !== null && bytes.length === 32 ? sha256Hex(bytes) : null;
}

/**
 * Share links, web-upload links and the guest drops opened through them (spec §8.5 to §8.8, §9.9).
 * New links are metadata growth; revoking always works; a drop is charged to the link owner (its
 * payer) when it is opened, within the link's cap and the payer's hard limit, both atomically.
 */
export class LinkService {
  readonly #d: LinkServiceDeps;
  constructor(deps: LinkServiceDeps) {
    this.#d = deps;
  }

  async create(
    caller: Principal,
    input: NewLink,
  ): Promise<
    Result<
      Link,
      | 'error.request.invalid'
      | 'error.not_found'
      | 'error.auth.reauthentication_required'
      | AlbumWriteRefusal
      | QuotaRefusal
    >
  > {
    if (!mayActForAccount(caller)) return refuse('error.not_found', 'No such account to link from.');
    const now = this.#d.clock.now();
    const bad = this.#check(input, now);
    if (bad) return refuse('error.request.invalid', bad);
    const admitted = await this.#d.quota.admit(caller.accountId, 'metadata_growth', 0);
    if (!admitted.ok) return admitted;
    if (input.albumId !== null) {
      // The album guard decides who may reach the album (core's access rule), its pin and quiescence.
      const gate = await this.#d.writeGuard.checkAlbumWrite(
        {
          accountId: caller.accountId,
          albumId: input.albumId,
          intentId: input.intentId,
          protocolVersion: input.protocolVersion,
        },
        now,
      );
      if (!gate.ok) return gate;
    }
    for (const id of input.assetIds) {
      if (!(await this.#d.assets.get(caller, id)).ok) return refuse('error.not_found', `No such asset: ${id}.`);
    }
    // Last of the refusals, so that the answer to a fresh session is the same as before.
    if (input.kind === 'upload') {
      const recent = await this.#d.recentAuth.requireRecentAuthentication(caller, 'upload_link_create');
      if (!recent.ok) return recent;
    }
    const id = toBase64url(this.#d.random.bytes(LINK_ID_BYTES));
    const idHash = linkIdHash(id)!;
    const link: LinkRecord = {
      idHash,
      sealedId: await sealLinkId(this.#d.sealer, id, idHash),
      ownerId: caller.accountId,
      kind: input.kind,
      albumId: input.albumId,
      assetIds: [...input.assetIds],
      wrappedKey: input.kind === 'share' ? input.wrappedKey : null,
      sealKey: input.kind === 'upload' ? input.sealKey : null,
      maxBytes: input.kind === 'upload' ? input.maxBytes : null,
      acceptedBytes: 0,
      createdAt: now,
      createdSessionId: caller.sessionId,
      expiresAt: input.expiresAt,
      revokedAt: null,
    };
    await guard(STORE, 'link write', () => this.#d.links.createLink(link));
    return ok({ ...link, id });
  }

  #check(input: NewLink, now: number): string | null {
    if (input.expiresAt !== null && input.expiresAt <= now) return 'expires_at must lie in the future.';
    if (input.kind === 'share') {
      if (input.wrappedKey === null) return 'A share link needs wrapped_key.';
      if (input.assetIds.length > MAX_LINK_ASSETS) return `A share link may name at most ${MAX_LINK_ASSETS} assets.`;
      if (new Set(input.assetIds).size !== input.assetIds.length) return 'asset_ids must not repeat.';
      return checkLinkKey('wrapped_key', input.wrappedKey);
    }
    if (input.albumId === null) return 'An upload link needs album_id.';
    if (input.sealKey === null) return 'An upload link needs seal_key.';
    if (input.maxBytes !== null && (!Number.isSafeInteger(input.maxBytes) || input.maxBytes < 1))
      return 'max_bytes must be a whole number from 1 to 2^53-1.';
    return checkLinkKey('seal_key', input.sealKey);
  }

  /** The link as anyone holding its id sees it: only while active. */
  async read(linkId: string): Promise<Result<Link, Missing>> {
    const link = await this.#find(linkId);
    if (link === null || linkStatus(link, this.#d.clock.now()) !== 'active')
      return refuse('error.not_found', 'No such link.');
    return ok({ ...link, id: linkId });
  }

  /** The caller's links, each with its id opened from its sealed copy. */
  async list(caller: Caller): Promise<Link[]> {
    if (!mayActForAccount(caller)) return [];
    const links = await guard(STORE, 'link read', () => this.#d.links.listLinks(caller.accountId));
    return Promise.all(links.map(async (l) => ({ ...l, id: await openLinkId(this.#d.sealer, l) })));
  }

  /**
   * Moves the links an earlier build stored under their clear id to their hash (core's
   * `sealClearLinkIds`); the server runs it once at start, before serving. Returns how many moved.
   */
  sealClearIds(): Promise<number> {
    return guard(STORE, 'link write', () =>
      sealClearLinkIds({ links: this.#d.links, sessions: this.#d.sessions }, this.#d.sealer),
    );
  }

  #find(linkId: string): Promise<LinkRecord | null> {
    return guard(STORE, 'link read', () => findLinkById(this.#d.links, linkId));
  }

  /** Revoking is always admitted, in every quota state. */
  async revoke(caller: Caller, linkId: string): Promise<Result<void, Missing>> {
    const link = await this.#find(linkId);
    if (link === null || !mayReach(caller, linkObject(link), 'write'))
      return refuse('error.not_found', 'No such link.');
    // The store's owner match restates the link's own owner: a link never changes hands.
    const done = await this.#d.uploads.revokeLink(link.ownerId, link.idHash);
    return done ? ok(undefined) : refuse('error.not_found', 'No such link.');
  }

  /**
   * A guest opens a drop: refused in GraceExpired and Suspended like any growth of the owner's
   * library; then, in one transaction of the upload store, the link's cap, the owner's open-session
   * bound and the payer's hard limit are decided (core's `decideOpen`) and the session, the
   * reservation, the link's accepted bytes and the drop record written together.
   */
  async openDrop(
    linkId: string,
    input: { declaredSize: number; contentHash: string | null; protocolVersion: string },
  ): Promise<Result<OpenedDrop, Missing | OpenRefusal | AlbumWriteRefusal | 'error.request.invalid'>> {
    const link = await this.#find(linkId);
    const now = this.#d.clock.now();
    if (link === null || link.kind !== 'upload' || linkStatus(link, now) !== 'active')
      return refuse('error.not_found', 'No such upload link.');
    if (!Number.isSafeInteger(input.declaredSize) || input.declaredSize < 1)
      return refuse('error.request.invalid', 'declared_size must be a whole number from 1 to 2^53-1.');
    // A drop lands in the link's album: its pin and quiescence hold as for any write there, and it
    // is answered as any write there is (spec §14.9: the 409 names `live_intent_id`). A guest
    // cannot name an upgrade intent, so while the album quiesces no drop opens; the id it is told
    // opens nothing to it (every write that may name it needs the owner's or a member's token).
    if (link.albumId !== null) {
      const gate = await this.#d.writeGuard.checkAlbumWrite(
        { accountId: link.ownerId, albumId: link.albumId, intentId: null, protocolVersion: input.protocolVersion },
        now,
      );
      if (!gate.ok) return gate;
    }
    const state = await this.#d.quota.admit(link.ownerId, 'metadata_growth', 0);
    if (!state.ok) return state;
    const tokenBytes = this.#d.random.bytes(32);
    // The session targets the link's album, so an open drop counts as in flight for its quiescence.
    const opened = await this.#d.uploads.openDrop(
      link.ownerId,
      link.idHash,
      { declaredSize: input.declaredSize, contentHash: input.contentHash, albumId: link.albumId },
      sha256Hex(tokenBytes),
    );
    // A drop names no device or peer, and its album passed the guard above: only the link, the bounds and the size can refuse it.
    if (!opened.ok) return opened as Result<never, Missing | OpenRefusal | 'error.request.invalid'>;
    return ok({
      uploadId: opened.value.uploadId,
      uploadToken: toBase64url(tokenBytes),
      expiresAt: opened.value.expiresAt,
    });
  }

  /**
   * The guest behind `Authorization: Upload <token>` for upload `uploadId`: the principal that may
   * send and finalize that one upload and nothing else. Null when the token is not that drop's.
   */
  async guest(token: string, uploadId: string): Promise<Principal | null> {
    const hash = uploadTokenHash(token);
    if (hash === null) return null;
    const drop = await guard(STORE, 'link read', () => this.#d.links.findDrop(uploadId));
    if (drop === null || !constantTimeEqual(fromHex(drop.tokenHash) ?? new Uint8Array(0), fromHex(hash)!)) return null;
    // A revoked link's tokens are refused at once (its drops still uploading were cancelled with it).
    const link = await guard(STORE, 'link read', () => this.#d.links.findLink(drop.linkIdHash));
    if (link === null || link.revokedAt !== null) return null;
    return { accountId: drop.ownerId, sessionId: '', guestUploadId: uploadId };
  }

  /** The drops of one of the caller's links. */
  async drops(caller: Caller, linkId: string): Promise<Result<DropView[], Missing>> {
    const link = await this.#find(linkId);
    if (link === null || link.kind !== 'upload' || !mayReach(caller, linkObject(link), 'read'))
      return refuse('error.not_found', 'No such upload link.');
    const now = this.#d.clock.now();
    const drops = await guard(STORE, 'link read', () => this.#d.links.listDrops(link.idHash));
    const out: DropView[] = [];
    for (const d of drops) out.push(await this.#view(d, now));
    return ok(out);
  }

  async #view(d: DropRecord, now: number): Promise<DropView> {
    const [session, asset] = await guard(STORE, 'drop read', () =>
      Promise.all([this.#d.sessions.findUpload(d.uploadId), this.#d.catalog.findAsset(d.uploadId)]),
    );
    return {
      uploadId: d.uploadId,
      declaredSize: d.declaredSize,
      createdAt: d.createdAt,
      ...dropState(session, asset, now),
    };
  }

  /** The owner takes a finalized drop into the library. */
  /**
   * Adopting lands the drop in its link's album: a write to that album, so it passes the album's
   * pin and quiescence like any other (`intentId` names the live intent to pass quiescence).
   */
  async adopt(
    caller: Caller,
    uploadId: string,
    input: { readonly intentId: string | null; readonly protocolVersion: string },
  ): Promise<Result<AssetRecord, Missing | 'error.conflict' | AlbumWriteRefusal>> {
    const drop = await this.#ownDrop(caller, uploadId);
    if (drop === null) return refuse('error.not_found', 'No such drop.');
    const now = this.#d.clock.now();
    const view = await this.#view(drop, now);
    if (view.state === 'uploading') return refuse('error.conflict', 'The drop has not been finalized yet.');
    if (view.state !== 'ready') return refuse('error.not_found', `The drop is ${view.state}.`);
    const albumId = await guard(STORE, 'upload session read', () => albumOfAsset(this.#d.sessions, uploadId));
    if (albumId !== null) {
      const gate = await this.#d.writeGuard.checkAlbumWrite(
        { accountId: drop.ownerId, albumId, intentId: input.intentId, protocolVersion: input.protocolVersion },
        now,
      );
      if (!gate.ok) return gate;
    }
    return this.#d.assets.adoptDrop({ accountId: drop.ownerId }, uploadId);
  }

  /** The owner discards a drop: an open upload is cancelled now, a finalized one freed at the sweep. */
  async discard(caller: Caller, uploadId: string): Promise<Result<void, Missing>> {
    const drop = await this.#ownDrop(caller, uploadId);
    if (drop === null) return refuse('error.not_found', 'No such drop.');
    const view = await this.#view(drop, this.#d.clock.now());
    if (view.state === 'uploading') {
      const cancelled = await this.#d.uploads.cancel({ accountId: drop.ownerId }, uploadId);
      if (cancelled.ok) return ok(undefined);
    }
    const discarded = await this.#d.assets.discardDrop({ accountId: drop.ownerId }, uploadId);
    return discarded.ok ? ok(undefined) : refuse('error.not_found', 'No pending drop to discard.');
  }

  async #ownDrop(caller: Caller, uploadId: string): Promise<DropRecord | null> {
    const drop = await guard(STORE, 'link read', () => this.#d.links.findDrop(uploadId));
    return drop !== null && mayReach(caller, { kind: 'drop', id: drop.uploadId, accountId: drop.ownerId }, 'write')
      ? drop
      : null;
  }
}

/** A link as the access rule sees it: it belongs to the account that made it. */
const linkObject = (l: LinkRecord) => ({ kind: 'link' as const, id: l.idHash, accountId: l.ownerId });

/** Where a drop stands, from its upload session, its asset and the clock. */
export function dropState(
  session: UploadSessionRecord | null,
  asset: AssetRecord | null,
  now: number,
): { state: DropState; expiresAt: number | null } {
  if (session !== null && isOpenState(uploadState(session, now)))
    return { state: 'uploading', expiresAt: session.expiresAt };
  if (
    session === null ||
    session.state === 'Cancelled' ||
    session.state === 'Expired' ||
    uploadState(session, now) === 'Expired'
  ) {
    return { state: session?.state === 'Cancelled' ? 'discarded' : 'expired', expiresAt: null };
  }
  if (asset === null) return { state: 'discarded', expiresAt: null };
  if (asset.state !== 'pending_drop') return { state: 'adopted', expiresAt: null };
  if (asset.dropExpiresAt !== null && now >= asset.dropExpiresAt)
    return { state: 'expired', expiresAt: asset.dropExpiresAt };
  return { state: 'ready', expiresAt: asset.dropExpiresAt };
}
