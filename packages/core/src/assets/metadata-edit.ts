import { ok, refuse, type Result } from '../errors.js';
import type { AssetBlob, AssetState, MetadataReplace } from '../ports/asset-catalog.js';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import { payerIdOf, settledLedgerFacts } from '../quota/ledger-rules.js';
import { admitWrite, nextHardSince, quotaStatus, type QuotaPolicy, type QuotaRefusal } from '../quota/machine.js';

/** Why a metadata edit is refused: the asset is not live (any more), or the payer's quota refuses it. */
export type MetadataEditRefusal = 'error.conflict' | QuotaRefusal;

/** Only a live asset takes metadata edits (a trashed asset or a pending drop does not; a missing one neither). */
export function admitsMetadataEdit(state: AssetState | null): Result<void, 'error.conflict'> {
  return state === 'live' ? ok(undefined) : refuse('error.conflict', 'Only a live asset takes metadata edits.');
}

/** What a store reads, inside the transaction that writes the edit, before replacing an asset's metadata. */
export interface MetadataReplaceFacts {
  /** The asset's state (null: no such asset). */
  readonly assetState: AssetState | null;
  /** The sizes of the asset's current metadata references (what the edit replaces). */
  readonly metadataSizes: readonly number[];
  /**
   * The ledger row of the account the edit acts as (the asset's owner): names its sponsor, if any,
   * and when it last trashed, restored, purged or emptied its trash (an edit soon after is a follow-up).
   */
  readonly account: QuotaAccountRecord;
  /** The paying account's row, after its lapsed sessions expired (the account's own row when it pays for itself). */
  readonly payer: QuotaAccountRecord;
  /** The size of the stored blob with the new hash, if one is stored already (by anyone). */
  readonly storedBlobSize: number | null;
}

/** What to write: the new blob (if not stored yet), the asset's one metadata reference, the payer's `hard_since`. */
export interface MetadataReplacePlan {
  readonly payerId: string;
  /** The blob to index, charged to the payer; null when the hash is stored already (nothing is charged). */
  readonly newBlob: { readonly contentHash: string; readonly size: number; readonly chargedTo: string } | null;
  /** The asset's metadata reference from now on (every earlier one drops); its size is the stored blob's. */
  readonly reference: AssetBlob;
  readonly hardSince: number | null;
}

/**
 * A caption or tag edit, decided in the transaction that writes it, as an upload opening is
 * (upload/decisions.ts decideOpen): the asset must be live, and the payer's state must admit it
 * (quota/machine.ts admitWrite, kind `metadata_update`): the size delta new minus old decides
 * whether it is growth, refused in GraceExpired and Suspended unless it follows the account's own
 * delete or restore, and then only while `used` plus the new blob's whole size (charged now; the
 * old one is credited by the sweep) stays within the follow-up overdraft. Concurrent edits for one
 * payer are serialised by the store, so each sees the charges of those before it. The answer never
 * depends on whether the new hash is stored (by anyone): only what is written does. Refused,
 * nothing is written.
 */
export function decideMetadataReplace(
  facts: MetadataReplaceFacts,
  input: Pick<MetadataReplace, 'contentHash' | 'size'>,
  policy: QuotaPolicy,
  now: number,
): Result<MetadataReplacePlan, MetadataEditRefusal> {
  const live = admitsMetadataEdit(facts.assetState);
  if (!live.ok) return live;
  const payerId = payerIdOf(facts.account);
  const lf = settledLedgerFacts(facts.payer, policy, now);
  const old = facts.metadataSizes.reduce((n, s) => n + s, 0);
  const verdict = admitWrite(
    quotaStatus(lf, now, policy.graceMs),
    {
      kind: 'metadata_update',
      delta: input.size - old,
      charge: input.size,
      uploadKind: null,
      trashActivityAt: facts.account.trashActivityAt,
    },
    policy,
    now,
  );
  if (!verdict.ok) return verdict;
  const newBlob =
    facts.storedBlobSize === null ? { contentHash: input.contentHash, size: input.size, chargedTo: payerId } : null;
  return ok({
    payerId,
    newBlob,
    reference: { kind: 'metadata', contentHash: input.contentHash, size: facts.storedBlobSize ?? input.size },
    hardSince: nextHardSince(
      { charged: lf.charged + (newBlob?.size ?? 0), reserved: lf.reserved, hardSince: lf.hardSince, limits: lf.limits },
      now,
    ),
  });
}
