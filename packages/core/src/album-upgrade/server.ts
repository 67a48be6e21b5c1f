import { constantTimeEqual } from '../encoding/bytes.js';
import { ok, refuse, type Result } from '../errors.js';
import type { AlbumRecord, PendingUpgrade, ProposeOutcome, UpgradeIntentRecord } from '../ports/album-store.js';

/**
 * The server side of the album upgrade ceremony (spec §14.6 to §14.10) as pure functions of the
 * album row, the time and (for the phase) the in-flight count. Expiry is computed, never a job: an
 * intent is live while `now < expiresAt`, and an expired one is simply absent.
 */

export type UpgradePhase = 'normal' | 'quiescing' | 'frozen';

export interface UpgradeStatus {
  readonly phase: UpgradePhase;
  readonly intentId: string | null;
  readonly toVersion: string | null;
  readonly expiresAt: number | null;
  readonly inFlight: number;
}

export const DEFAULT_UPGRADE_DEADLINE_S = 604_800;
/** 90 days: the longest an intent may hold an album (decisions, "What a stolen access token is worth"). */
export const MAX_UPGRADE_DEADLINE_S = 7_776_000;

/** The intent holding the album at `now`, or null (none, aborted, or past its deadline). */
export function liveUpgrade(album: AlbumRecord, now: number): PendingUpgrade | null {
  const u = album.upgrade;
  return u !== null && now < u.expiresAt ? u : null;
}

/** received_at + deadline; the deadline is bounded at parse time, so this is always a real date. */
export function upgradeExpiresAt(receivedAt: number, deadlineS: number): number {
  return receivedAt + deadlineS * 1000;
}

/** `frozen` is `quiescing` with nothing in flight; a write naming the intent makes it quiescing again. */
export function upgradeStatus(album: AlbumRecord, inFlight: number, now: number): UpgradeStatus {
  const live = liveUpgrade(album, now);
  if (live === null) return { phase: 'normal', intentId: null, toVersion: null, expiresAt: null, inFlight };
  return {
    phase: inFlight > 0 ? 'quiescing' : 'frozen',
    intentId: live.intentId,
    toVersion: live.toVersion,
    expiresAt: live.expiresAt,
    inFlight,
  };
}

/**
 * Decides a proposal against the album and whatever is stored under the same intent id. Stores
 * call this inside their atomic `proposeIntent`.
 */
export function decideProposal(
  album: AlbumRecord | null,
  known: UpgradeIntentRecord | null,
  proposal: UpgradeIntentRecord,
  now: number,
): ProposeOutcome {
  if (album === null || album.id !== proposal.albumId) return { kind: 'no_album' };
  const live = liveUpgrade(album, now);
  if (known !== null) {
    // intent_id is the idempotency key: the live intent again is the same status; anything else
    // under a used id (other content, another album, or an intent no longer live) is refused, so
    // one intent can never have two lives.
    const same = known.albumId === proposal.albumId && constantTimeEqual(known.intentCbor, proposal.intentCbor);
    if (same && live !== null && live.intentId === known.intentId) return { kind: 'same', intent: known };
    if (live !== null && live.intentId !== proposal.intentId) return { kind: 'in_flight', liveIntentId: live.intentId };
    return { kind: 'reused' };
  }
  if (live !== null) return { kind: 'in_flight', liveIntentId: live.intentId };
  return { kind: 'accepted', intent: proposal };
}

/** The album row after an accepted proposal. */
export function withUpgrade(album: AlbumRecord, intent: UpgradeIntentRecord): AlbumRecord {
  return {
    ...album,
    upgrade: {
      intentId: intent.intentId,
      toVersion: intent.toVersion,
      receivedAt: intent.receivedAt,
      expiresAt: intent.expiresAt,
    },
  };
}

/** Abort is only by the id of the intent that holds the album now. */
export function decideAbort(album: AlbumRecord, intentId: string, now: number): boolean {
  const live = liveUpgrade(album, now);
  return live !== null && live.intentId === intentId;
}

/** Quiescence is a filter: a write naming the live intent passes, any other is held back. */
export function decideQuiescence(
  album: AlbumRecord,
  intentId: string | null,
  now: number,
): Result<void, 'error.upload.album_quiescing'> {
  const live = liveUpgrade(album, now);
  if (live !== null && live.intentId !== intentId) {
    return refuse(
      'error.upload.album_quiescing',
      'The album is quiescing for an upgrade; the write must name the live intent.',
      {
        live_intent_id: live.intentId,
      },
    );
  }
  return ok(undefined);
}

/**
 * A finalize whose manifest names an intent other than the album's live one (or any intent when
 * none is live) is a generic conflict. A manifest naming no intent is judged at session creation only.
 */
export function decideManifestIntent(
  album: AlbumRecord,
  manifestIntentId: string | null,
  now: number,
): Result<void, 'error.conflict'> {
  if (manifestIntentId === null) return ok(undefined);
  const live = liveUpgrade(album, now);
  if (live === null || live.intentId !== manifestIntentId) {
    return refuse('error.conflict', 'The manifest names an upgrade intent that does not hold this album.');
  }
  return ok(undefined);
}
