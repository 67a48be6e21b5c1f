import { utf8 } from '../encoding/bytes.js';
import type { SecretSealer } from '../secrets/secret-box.js';
import type { SyncPosition } from './page.js';

/**
 * Cursors are opaque to clients: the position sealed under the server key (AES-GCM), bound by its
 * context to the account (a sync cursor) or the link's id hash (a link listing's). A cursor of
 * another account, or altered, does not open.
 */
const syncContext = (accountId: string): string => `svc-sync-cursor/v1:${accountId}`;
const linkContext = (idHash: string): string => `svc-link-cursor/v1:${idHash}`;

export function sealSyncCursor(sealer: SecretSealer, accountId: string, position: SyncPosition): Promise<string> {
  return sealer.seal(utf8(JSON.stringify([position.seq, position.issuedAt, position.floor])), syncContext(accountId));
}

/** The position, or null when the cursor is not one this server issued for this account. */
export async function openSyncCursor(
  sealer: SecretSealer,
  accountId: string,
  cursor: string,
): Promise<SyncPosition | null> {
  const parsed = await openJson(sealer, cursor, syncContext(accountId));
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    !parsed.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)
  )
    return null;
  return { seq: parsed[0] as number, issuedAt: parsed[1] as number, floor: parsed[2] as number };
}

export function sealLinkCursor(sealer: SecretSealer, idHash: string, lastAssetId: string): Promise<string> {
  return sealer.seal(utf8(JSON.stringify(lastAssetId)), linkContext(idHash));
}

export async function openLinkCursor(sealer: SecretSealer, idHash: string, cursor: string): Promise<string | null> {
  const parsed = await openJson(sealer, cursor, linkContext(idHash));
  return typeof parsed === 'string' ? parsed : null;
}

async function openJson(sealer: SecretSealer, cursor: string, context: string): Promise<unknown> {
  const bytes = await sealer.open(cursor, context);
  if (bytes === null) return null;
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
  } catch {
    return null;
  }
}
