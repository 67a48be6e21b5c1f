/**
 * How a backup is sealed to its operator, decided from what the operator configured: to age
 * recipients, to a passphrase, or, only when asked for in so many words, not at all. Nothing
 * configured is refused: a backup folder travels, and one in the clear beside its key was enough
 * to forge tokens. Age cannot encrypt one file to both recipients and a passphrase.
 */
export type BackupSealingChoice = 'recipients' | 'passphrase' | 'none';

export interface BackupSealingSettings {
  readonly recipients: number;
  readonly passphrase: boolean;
  readonly unencrypted: boolean;
}

/** What went wrong, naming the setting (`setting` is one of the names the caller gave). */
export interface BackupSealingProblem {
  readonly setting: 'recipients' | 'passphrase' | 'unencrypted';
  readonly cause: 'missing' | 'contradicts_unencrypted' | 'recipients_and_passphrase';
}

export function chooseBackupSealing(
  s: BackupSealingSettings,
): { ok: true; sealing: BackupSealingChoice } | { ok: false; problem: BackupSealingProblem } {
  if (s.unencrypted && (s.recipients > 0 || s.passphrase))
    return { ok: false, problem: { setting: 'unencrypted', cause: 'contradicts_unencrypted' } };
  if (s.recipients > 0 && s.passphrase)
    return { ok: false, problem: { setting: 'passphrase', cause: 'recipients_and_passphrase' } };
  if (s.recipients > 0) return { ok: true, sealing: 'recipients' };
  if (s.passphrase) return { ok: true, sealing: 'passphrase' };
  if (s.unencrypted) return { ok: true, sealing: 'none' };
  return { ok: false, problem: { setting: 'recipients', cause: 'missing' } };
}

/**
 * Whether the server key goes into the backup: only encrypted, and only when it is the data
 * directory's file. An unencrypted backup never holds it (the folder would open every sealed
 * secret in it); a key from the environment is the operator's to keep apart.
 */
export function backupHoldsKey(k: {
  readonly keyFromDataDir: boolean;
  readonly sealing: BackupSealingChoice;
}): boolean {
  return k.keyFromDataDir && k.sealing !== 'none';
}
