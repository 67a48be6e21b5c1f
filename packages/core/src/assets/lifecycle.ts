import { type FilterTerm, holds, type RowFilter } from '../filters/filter.js';
import type { AssetState } from '../ports/asset-catalog.js';

/**
 * The asset lifecycle, decided once. Every store (memory, SQLite, PostgreSQL) reads the asset row
 * inside its write transaction, asks this function, and writes what it answers by the row's id
 * alone: no store restates which state may move where in a WHERE clause.
 *
 *   live ──trash──▶ trashed ──restore──▶ live
 *   trashed ──purge / empty_trash──▶ (deleted; references drop, bytes credited by the sweep)
 *   pending_drop ──purge / discard──▶ (deleted)
 *   pending_drop (unexpired) ──adopt──▶ live
 *   any state ──erase──▶ (deleted: its owner's account is being deleted)
 */

/** What the rule needs of an asset row. */
export interface AssetLifecycleFacts {
  readonly state: AssetState;
  readonly trashedAt: number | null;
  readonly dropExpiresAt: number | null;
}

export type AssetAction =
  | { readonly kind: 'trash'; readonly now: number }
  | { readonly kind: 'restore' }
  /** A hard purge of one asset: a trashed asset, or a pending drop being discarded. */
  | { readonly kind: 'purge' }
  /** Emptying the owner's trash: only trashed assets go (a pending drop is not in the trash). */
  | { readonly kind: 'empty_trash' }
  /** The link owner discards a guest's pending drop: only a drop still pending goes (adopted, it stays). */
  | { readonly kind: 'discard' }
  | { readonly kind: 'adopt'; readonly now: number }
  /**
   * The owner's account is deleted: every asset goes, whatever its state. The two-step purge guards
   * a library against one click; deleting the account is a recent-authenticated decision to lose it.
   */
  | { readonly kind: 'erase' };

/** Why the action does not apply to the asset as it stands (or as it no longer stands). */
export type AssetTransitionRefusal =
  | 'missing'
  | 'not_live'
  | 'not_trashed'
  | 'not_purgeable'
  | 'not_pending_drop'
  | 'drop_expired';

export type AssetTransition =
  | { readonly ok: true; readonly write: 'update'; readonly next: AssetLifecycleFacts }
  | { readonly ok: true; readonly write: 'delete' }
  | { readonly ok: false; readonly refusal: AssetTransitionRefusal };

const refused = (refusal: AssetTransitionRefusal): AssetTransition => ({ ok: false, refusal });

/** A pending drop is adoptable until its expiry (exclusive); one without an expiry never lapses. */
const DROP_EXPIRY: FilterTerm<'dropExpiresAt'> = { op: '<=', field: 'dropExpiresAt', param: 'now' };

/** The pending drops lapsed at `now` (parameter `now`): the sweep deletes them, adoption refuses them. */
export const DROP_LAPSED: RowFilter<'state' | 'dropExpiresAt'> = [
  { op: 'in', field: 'state', values: ['pending_drop'] },
  DROP_EXPIRY,
];

export const dropExpired = (dropExpiresAt: number | null, now: number): boolean =>
  holds([DROP_EXPIRY], { dropExpiresAt }, { now });

export function decideAssetTransition(asset: AssetLifecycleFacts | null, action: AssetAction): AssetTransition {
  if (!asset) return refused('missing');
  switch (action.kind) {
    case 'trash':
      if (asset.state !== 'live') return refused('not_live');
      return {
        ok: true,
        write: 'update',
        next: { state: 'trashed', trashedAt: action.now, dropExpiresAt: asset.dropExpiresAt },
      };
    case 'restore':
      if (asset.state !== 'trashed') return refused('not_trashed');
      return {
        ok: true,
        write: 'update',
        next: { state: 'live', trashedAt: null, dropExpiresAt: asset.dropExpiresAt },
      };
    case 'purge':
      // A live asset goes to the trash first, so a purge is never one click from a live library.
      if (asset.state === 'live') return refused('not_purgeable');
      return { ok: true, write: 'delete' };
    case 'empty_trash':
      if (asset.state !== 'trashed') return refused('not_trashed');
      return { ok: true, write: 'delete' };
    case 'discard':
      if (asset.state !== 'pending_drop') return refused('not_pending_drop');
      return { ok: true, write: 'delete' };
    case 'adopt':
      if (asset.state !== 'pending_drop') return refused('not_pending_drop');
      if (dropExpired(asset.dropExpiresAt, action.now)) return refused('drop_expired');
      return { ok: true, write: 'update', next: { state: 'live', trashedAt: asset.trashedAt, dropExpiresAt: null } };
    case 'erase':
      return { ok: true, write: 'delete' };
  }
}

const ASSET_STATES: readonly AssetState[] = ['live', 'trashed', 'pending_drop'];

/**
 * The states from which `empty_trash` can apply, derived from the rule above (never restated):
 * a store may narrow its read of the owner's rows to these through its (owner, state) index and
 * must still ask decideAssetTransition about each row it read.
 */
export const EMPTY_TRASH_CANDIDATE_STATES: readonly AssetState[] = ASSET_STATES.filter(
  (state) => decideAssetTransition({ state, trashedAt: 0, dropExpiresAt: null }, { kind: 'empty_trash' }).ok,
);
