import { ok, refuse, type Result } from '../errors.js';

/**
 * Who may reach an object: the one rule (spec §8.1).
 *
 * A caller reaches an object only when the object belongs to the account the request acts as:
 * the caller's own account, or the sponsored account named by `X-Svc-Act-As` when the caller is one
 * of its owners. By the time a service sees the principal, act-as is resolved (mount.ts and
 * SponsorshipService.actAs): `accountId` is then the sponsored account, so one comparison with the
 * object's account says it all. Sharing a payer never grants access: paying for an account is not
 * owning its objects, so no payer is read here. Every service that takes an object id asks
 * `mayReach` (or `reach`) and answers 404 on a refusal, the same as for no object.
 *
 * A guest (a web-upload drop's upload token) reaches its own upload session, to send and finalize
 * its bytes, and nothing else: never to read it, never another object of the link's owner.
 */

/** The kinds of object a request can name by id. */
export type ObjectKind = 'asset' | 'upload' | 'federated_fill' | 'album' | 'link' | 'drop' | 'directory' | 'session';

/** What a request wants to do with the object. `send` is a guest's drop: its bytes and finalize. */
export type AccessAction = 'read' | 'write' | 'send';

/** An object as the rule sees it: its kind, its id, and the account it belongs to. */
export interface Reachable {
  readonly kind: ObjectKind;
  readonly id: string;
  /** The account the object belongs to (an asset's owner, an upload's uploader, a link's owner). */
  readonly accountId: string;
}

/** The part of a Principal the rule reads (session/service.ts). */
export interface Accessor {
  readonly accountId: string;
  readonly guestUploadId?: string | undefined;
}

/** May `who` do `action` on `object`? Pure, and the only place this is decided. */
export function mayReach(who: Accessor, object: Reachable, action: AccessAction): boolean {
  // An unauthenticated principal (routes without auth carry an empty account) reaches nothing.
  if (who.accountId === '' || object.accountId !== who.accountId) return false;
  if (who.guestUploadId !== undefined)
    return object.kind === 'upload' && object.id === who.guestUploadId && action === 'send';
  return true;
}

/** `mayReach` as a Result: the object, or the 404 every refusal shares with "no such object". */
export function reach<T extends Reachable>(
  who: Accessor,
  object: T | null,
  action: AccessAction,
  missing = 'No such object.',
): Result<T, 'error.not_found'> {
  return object !== null && mayReach(who, object, action) ? ok(object) : refuse('error.not_found', missing);
}

/**
 * May `who` act for its account as a whole: open a new object in it (an upload, a federated fill,
 * an album, a link), list its objects, empty its trash? Any signed-in account, or an owner acting
 * as a sponsored account; never a guest, whose token names one existing drop and nothing more
 * ("guests cannot open federated fills", nor anything else).
 */
export function mayActForAccount(who: Accessor): boolean {
  return who.accountId !== '' && who.guestUploadId === undefined;
}

/** Who asks for a handle lookup: a local account, or a listed peer holding a capability token. */
export type Looker = { readonly kind: 'local' } | { readonly kind: 'peer' };

/**
 * Where a lookup of a handle goes. A local handle is answered here; another host's is forwarded to
 * that peer only for a local account: a peer's capability token vouches for that peer's request to
 * this server and never relays onward (it would let one peer reach a third through us).
 */
export function decideLookup(looker: Looker, handleIsLocal: boolean): Result<'local' | 'forward', 'error.not_found'> {
  if (handleIsLocal) return ok('local');
  if (looker.kind === 'peer') return refuse('error.not_found', 'No account has this handle.');
  return ok('forward');
}
