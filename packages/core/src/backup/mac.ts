import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { constantTimeEqual, toHex, utf8 } from '../encoding/bytes.js';
import type { BackupProblem } from './manifest.js';
import { MANIFEST_FILE } from './manifest.js';

/**
 * The manifest's MAC: whoever copies or edits a backup folder cannot make a manifest that verifies
 * without the deployment's secret key, which is never in the folder in the clear. A SHA-256
 * manifest alone proves nothing against someone who can rewrite it.
 *
 * What is covered: the manifest's whole body (every file's path and SHA-256, `backup.json`
 * included, so the backup's time, database kind, key fingerprint and encryption are covered too),
 * byte for byte. The key: HKDF-SHA-256 of the secret key with the label below, so the MAC key is
 * used for nothing else. The MAC is HMAC-SHA-256, carried as the manifest's last line, a comment
 * `sha256sum -c` skips: `# strongroom-backup-mac/v1 <64 hex>`.
 */
export const BACKUP_MAC_LABEL = 'strongroom/backup-manifest-mac/v1';
const TRAILER = '# strongroom-backup-mac/v1 ';

function macKey(secretKey: Uint8Array): Uint8Array {
  return hkdf(sha256, secretKey, undefined, utf8(BACKUP_MAC_LABEL), 32);
}

/** The MAC of a manifest body under the deployment's secret key, in hex. */
export function backupManifestMac(secretKey: Uint8Array, body: string): string {
  return toHex(hmac(sha256, macKey(secretKey), utf8(body)));
}

/** The manifest as written: its body, then the MAC line. */
export function sealManifest(secretKey: Uint8Array, body: string): string {
  if (body !== '' && !body.endsWith('\n')) throw new RangeError('a manifest body ends with a newline');
  return `${body}${TRAILER}${backupManifestMac(secretKey, body)}\n`;
}

/**
 * Splits a written manifest into its body and checks the MAC under `secretKey` (compared in
 * constant time). The body, or the problem: no MAC line (a manifest from before MACs, or one whose
 * line was cut), or a MAC that does not verify (edited, or another deployment's key).
 */
export function openManifest(
  secretKey: Uint8Array,
  text: string,
): { ok: true; body: string } | { ok: false; problem: BackupProblem } {
  const at = text.lastIndexOf(TRAILER);
  const lineStart = at === 0 || (at > 0 && text[at - 1] === '\n');
  const m = lineStart ? /^([0-9a-f]{64})\n$/.exec(text.slice(at + TRAILER.length)) : null;
  if (m === null)
    return {
      ok: false,
      problem: {
        file: MANIFEST_FILE,
        cause: 'carries no MAC line (not a backup of this build, or its end was cut off)',
      },
    };
  const body = text.slice(0, at);
  const expected = backupManifestMac(secretKey, body);
  if (!constantTimeEqual(utf8(expected), utf8(m[1]!))) {
    return {
      ok: false,
      problem: {
        file: MANIFEST_FILE,
        cause:
          "MAC does not verify under the deployment's secret key: the backup was changed after it was taken, or it is another deployment's",
      },
    };
  }
  return { ok: true, body };
}
