import type { Result } from '../errors.js';

/** Who is writing, from where, into what: enough to decide whether a write may happen at all. */
export interface WriteContext {
  readonly accountId: string;
  /** The writing device; must be listed in the account's published device directory. */
  readonly deviceId: string;
  /**
   * Whose directory lists the device, when not `accountId`'s: the acting owner of a sponsored
   * account (a write made as it names a device of the owner's directory).
   */
  readonly deviceAccountId?: string | undefined;
  readonly albumId: string | null;
  /** The live upgrade intent the write names, if any (quiescence is a filter on it). */
  readonly intentId: string | null;
  /** The request's X-Svc-Protocol version. */
  readonly protocolVersion: string;
}

/** A write that lands in an album but comes from no device: a link on it, a guest's drop through one. */
export interface AlbumWriteContext {
  /** The album's owner as the writer claims it (a link's creator, a drop's link owner). */
  readonly accountId: string;
  readonly albumId: string;
  /** The live upgrade intent the write names, if any (guest drops name none). */
  readonly intentId: string | null;
  /** The request's X-Svc-Protocol version. */
  readonly protocolVersion: string;
}

export type AlbumWriteRefusal = 'error.not_found' | 'error.protocol.below_album_pin' | 'error.upload.album_quiescing';

/** A later request of an upload session opened in an album (its bytes, its finalize). */
export interface InFlightWriteContext {
  readonly albumId: string;
  /** This request's X-Svc-Protocol version, not the one the session was opened with. */
  readonly protocolVersion: string;
}

export type WriteRefusal =
  | 'error.device.unknown'
  | 'error.upload.album_quiescing'
  | 'error.protocol.below_album_pin'
  | 'error.not_found';

/**
 * Checks a write against the device directory, the album's pin and its upgrade quiescence.
 * Implemented by the album/device area; called by every writing operation (upload session
 * creation first of all) before it changes anything.
 */
export interface WriteGuard {
  checkWrite(context: WriteContext, now: number): Promise<Result<void, WriteRefusal>>;
  /**
   * The album part of `checkWrite` alone (ownership, pin, quiescence), for writes into an album that
   * no device makes: share and upload links on it, and guest drops through an upload link.
   */
  checkAlbumWrite(context: AlbumWriteContext, now: number): Promise<Result<void, AlbumWriteRefusal>>;
  /**
   * The album part for the bytes and the finalize of a session opened in the album: each request
   * is a write to it, so the album's pin holds for each (a session opened at the pin is not a pass
   * for later requests below it). Quiescence is not judged again: the session passed it when it
   * opened and counts in flight, and an in-flight upload may reach its terminal state (spec §14.9).
   */
  checkInFlightWrite(context: InFlightWriteContext): Promise<Result<void, 'error.protocol.below_album_pin'>>;
  /**
   * Called by upload finalize: a manifest naming an intent other than the album's live one (or any
   * intent when none is live, or when the upload targets no album) is a generic 409 `error.conflict`.
   */
  checkFinalize(context: FinalizeContext, now: number): Promise<Result<void, 'error.conflict'>>;
}

/** What finalize knows: the upload session's album and the intent id its manifest names. */
export interface FinalizeContext {
  readonly accountId: string;
  readonly albumId: string | null;
  readonly manifestIntentId: string | null;
}

/** A guard that admits everything: only for tests of areas that do not involve devices or albums. */
export const admitAllWrites: WriteGuard = {
  checkWrite: async () => ({ ok: true, value: undefined }),
  checkAlbumWrite: async () => ({ ok: true, value: undefined }),
  checkInFlightWrite: async () => ({ ok: true, value: undefined }),
  checkFinalize: async () => ({ ok: true, value: undefined }),
};
