import { sha256 } from '../encoding/bytes.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { CoreError } from '../errors.js';

/**
 * The member side of the album upgrade ceremony (spec §14.11), for clients that embed core. MLS
 * is modelled as inputs: the UpgradeIntent application message and the AlbumTombstone commit
 * arrive as events. The state is what the client persists; every write the member must send sits
 * in `outbox` until acknowledged, so a crash between deciding and sending loses nothing and the
 * receiver's deduplication by `writeId` keeps it to once.
 */

export type MemberPhase = 'normal' | 'quiescing' | 'frozen' | 'upgraded';

export interface MemberIntent {
  readonly intentId: string;
  readonly fromVersion: string;
  /** upgrade_pending_to: what a restarted client reads to resume. */
  readonly toVersion: string;
}

/** A local write held back during quiescence (`pending_until_upgrade`, with the intent id). */
export interface QueuedWrite {
  readonly writeId: string;
  readonly payload: Uint8Array;
  readonly pendingUntilUpgrade: true;
  readonly intentId: string;
}

/** A write on its way to the server: to the old album at its version, or replayed on the new one. */
export interface OutgoingWrite {
  readonly writeId: string;
  readonly albumId: string;
  /** The protocol version the payload is (re-)encoded for. */
  readonly version: string;
  readonly payload: Uint8Array;
}

/** Lineage in the new album's signed manifests (never mirrored into the envelope projection). */
export interface UpgradedFrom {
  readonly oldAlbumId: string;
  readonly intentId: string;
  readonly frozenStateHash: Uint8Array;
}

/** The fork: blobs are referenced by content hash, not re-encrypted; keys are fresh. */
export interface ForkRecord {
  readonly albumId: string;
  readonly version: string;
  readonly upgradedFrom: UpgradedFrom;
  readonly blobRefs: readonly string[];
  readonly albumMasterKey: { readonly version: 1; readonly key: Uint8Array };
  readonly writeTierKey: Uint8Array;
}

export interface MemberState {
  readonly albumId: string;
  /** The album's pin. */
  readonly version: string;
  readonly phase: MemberPhase;
  readonly intent: MemberIntent | null;
  readonly queue: readonly QueuedWrite[];
  readonly outbox: readonly OutgoingWrite[];
  readonly fork: ForkRecord | null;
}

export type MemberEvent =
  | { readonly type: 'intent'; readonly intent: MemberIntent }
  | { readonly type: 'local_write'; readonly writeId: string; readonly payload: Uint8Array }
  /** What the server's upgrade status says (after a crash, or when polled). */
  | {
      readonly type: 'server_phase';
      readonly phase: 'normal' | 'quiescing' | 'frozen';
      readonly intentId: string | null;
    }
  | {
      readonly type: 'tombstone';
      readonly intentId: string;
      readonly frozenStateHash: Uint8Array;
      /** frozenStateHash recomputed by this member over its own copy of the album. */
      readonly localHash: Uint8Array;
      readonly newAlbumId: string;
      readonly blobRefs: readonly string[];
      readonly albumMasterKey: Uint8Array;
      readonly writeTierKey: Uint8Array;
    }
  | { readonly type: 'sent'; readonly writeId: string };

export type MemberEffect =
  | { readonly type: 'reject_intent'; readonly intentId: string; readonly liveIntentId: string }
  | { readonly type: 'upgrade_aborted'; readonly intentId: string; readonly reason: 'server_normal' | 'hash_mismatch' }
  | { readonly type: 'cut_over'; readonly fork: ForkRecord }
  | { readonly type: 'ignored'; readonly reason: string };

export function initialMemberState(albumId: string, version: string): MemberState {
  return { albumId, version, phase: 'normal', intent: null, queue: [], outbox: [], fork: null };
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Back to normal: every queued write is flushed to the old album at its own version. */
function flushToOld(state: MemberState): MemberState {
  const flushed = state.queue.map((w) => ({
    writeId: w.writeId,
    albumId: state.albumId,
    version: state.version,
    payload: w.payload,
  }));
  return { ...state, phase: 'normal', intent: null, queue: [], outbox: [...state.outbox, ...flushed] };
}

/** The member's transition: synchronous, total, no I/O. */
export function memberTransition(
  state: MemberState,
  event: MemberEvent,
): { state: MemberState; effects: MemberEffect[] } {
  const same = (s: MemberState, effects: MemberEffect[] = []) => ({ state: s, effects });
  switch (event.type) {
    case 'intent': {
      if (state.phase === 'upgraded') return same(state, [{ type: 'ignored', reason: 'album already upgraded' }]);
      if (state.intent !== null) {
        if (state.intent.intentId === event.intent.intentId) return same(state);
        return same(state, [
          { type: 'reject_intent', intentId: event.intent.intentId, liveIntentId: state.intent.intentId },
        ]);
      }
      if (event.intent.fromVersion !== state.version)
        return same(state, [{ type: 'ignored', reason: "intent is not from this album's version" }]);
      return same({ ...state, phase: 'quiescing', intent: event.intent });
    }
    case 'local_write': {
      if (state.phase === 'normal') {
        return same({
          ...state,
          outbox: [
            ...state.outbox,
            { writeId: event.writeId, albumId: state.albumId, version: state.version, payload: event.payload },
          ],
        });
      }
      if (state.phase === 'upgraded') {
        const fork = state.fork!;
        return same({
          ...state,
          outbox: [
            ...state.outbox,
            { writeId: event.writeId, albumId: fork.albumId, version: fork.version, payload: event.payload },
          ],
        });
      }
      const queued: QueuedWrite = {
        writeId: event.writeId,
        payload: event.payload,
        pendingUntilUpgrade: true,
        intentId: state.intent!.intentId,
      };
      return same({ ...state, queue: [...state.queue, queued] });
    }
    case 'server_phase': {
      if (state.intent === null || state.phase === 'upgraded') return same(state);
      if (event.phase === 'normal' || event.intentId !== state.intent.intentId) {
        // Expired or aborted on the server (expiry is absence of state): the upgrade is off.
        return same(flushToOld(state), [
          { type: 'upgrade_aborted', intentId: state.intent.intentId, reason: 'server_normal' },
        ]);
      }
      return same({ ...state, phase: event.phase });
    }
    case 'tombstone': {
      if (state.phase === 'upgraded' && state.fork?.upgradedFrom.intentId === event.intentId)
        return same(state, [{ type: 'ignored', reason: 'duplicate tombstone' }]);
      if (state.intent === null || state.intent.intentId !== event.intentId)
        return same(state, [{ type: 'ignored', reason: 'tombstone for an intent not held' }]);
      if (!equalBytes(event.frozenStateHash, event.localHash)) {
        return same(flushToOld(state), [
          { type: 'upgrade_aborted', intentId: event.intentId, reason: 'hash_mismatch' },
        ]);
      }
      const fork: ForkRecord = {
        albumId: event.newAlbumId,
        version: state.intent.toVersion,
        upgradedFrom: { oldAlbumId: state.albumId, intentId: event.intentId, frozenStateHash: event.frozenStateHash },
        blobRefs: event.blobRefs,
        albumMasterKey: { version: 1, key: event.albumMasterKey },
        writeTierKey: event.writeTierKey,
      };
      // The single commit is the cutover: queued writes are re-encoded for to_version and replayed.
      const replay = state.queue.map((w) => ({
        writeId: w.writeId,
        albumId: fork.albumId,
        version: fork.version,
        payload: w.payload,
      }));
      return same({ ...state, phase: 'upgraded', queue: [], outbox: [...state.outbox, ...replay], fork }, [
        { type: 'cut_over', fork },
      ]);
    }
    case 'sent':
      return same({ ...state, outbox: state.outbox.filter((w) => w.writeId !== event.writeId) });
  }
}

/** The album's full state as the frozen hash covers it. */
export interface FrozenAlbumState {
  readonly members: readonly string[];
  readonly manifestHashes: readonly Uint8Array[];
  readonly provenanceHead: Uint8Array;
}

const compareBytes = (a: Uint8Array, b: Uint8Array): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
};

/**
 * frozen_state_hash: the suite's content hash over canonical CBOR of the sorted member list, every
 * accepted manifest's hash (sorted bytewise, so arrival order does not matter) and the provenance
 * head. Suite 1 hashes with SHA-256.
 */
export function frozenStateHash(state: FrozenAlbumState, cryptoSuiteId: number): Uint8Array {
  if (cryptoSuiteId !== 1)
    throw new CoreError('error.request.invalid', `crypto_suite_id ${cryptoSuiteId} is not supported`);
  const members = [...state.members].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const manifests = [...state.manifestHashes].sort(compareBytes);
  return sha256(canonicalCbor(['svc-frozen-state/v1', members, manifests, state.provenanceHead]));
}
