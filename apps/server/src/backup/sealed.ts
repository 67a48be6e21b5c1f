import { TotpSecretBox, type Random } from '@strongroom/core';

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

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'totp_enrollments', column: 'sealed_secret', context: 'account_id', opener: totpBox },
  { table: 'oidc_flows', column: 'sealed_verifier', context: 'state_hash', opener: totpBox },
];
