import {
  keySealContext,
  openLinkId,
  SecretBox,
  TotpSecretBox,
  type Random,
  type SealedKeyKind,
} from '@strongroom/core';

/**
 * Every database column holding a value sealed under the server key, with the column whose value
 * was the additional data when it was sealed, and how to open it. `verify-backup` (and `restore`
 * before it writes anything) opens every value of every column listed here with the backup's key:
 * a backup whose key cannot open them is refused, naming the column. Sealing another column means
 * one more line here.
 */
export interface SealedColumn {
  readonly table: string;
  readonly column: string;
  readonly context: string;
  /** Opens a value under `key`, bound to `context`; false when it does not open. */
  readonly opener: (key: Uint8Array) => (sealed: string, context: string) => Promise<boolean>;
  /**
   * The context is the hash of a bearer secret (a link id, a flow's state): a message never names
   * it, as nothing the server says names a link id or its hash.
   */
  readonly contextWithheld?: true;
}

/** How a failure names the row whose value did not open. */
export function rowNamed(col: SealedColumn, context: string): string {
  return col.contextWithheld
    ? `one row (its ${col.context} withheld: it is the hash of a bearer secret)`
    : `${col.context} ${context}`;
}

// Sealing needs randomness, opening does not: the boxes here only open.
const noRandom: Random = {
  bytes() {
    throw new Error('opening only');
  },
};
const totpBox = (key: Uint8Array) => {
  const box = new TotpSecretBox({ key, random: noRandom });
  return async (sealed: string, context: string) => (await box.open(sealed, context)) !== null;
};

/** A ring's private keys: sealed with their kind and kid as the context (core's keySealContext). */
const keyBox = (kind: SealedKeyKind) => (key: Uint8Array) => {
  const box = new SecretBox({ key, random: noRandom });
  return async (sealed: string, kid: string) => (await box.open(sealed, keySealContext(kind, kid))) !== null;
};

/** A link's id: sealed with its row's hash as the context, and opening to an id of that hash (core's openLinkId). */
const linkIdBox = (key: Uint8Array) => {
  const box = new SecretBox({ key, random: noRandom });
  return (sealed: string, idHash: string) =>
    openLinkId(box, { idHash, sealedId: sealed }).then(
      () => true,
      () => false,
    );
};

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'totp_enrollments', column: 'sealed_secret', context: 'account_id', opener: totpBox },
  { table: 'oidc_flows', column: 'sealed_verifier', context: 'state_hash', opener: totpBox, contextWithheld: true },
  { table: 'signing_keys', column: 'private_key', context: 'kid', opener: keyBox('signing') },
  { table: 'attestation_keys', column: 'private_key', context: 'kid', opener: keyBox('attestation') },
  { table: 'links', column: 'sealed_id', context: 'id_hash', opener: linkIdBox, contextWithheld: true },
];
