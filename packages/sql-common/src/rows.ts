import { addressCountKey, OPEN_STATES } from '@strongroom/core/internal';
import type {
  AccountRecord,
  AddressGuessState,
  AlbumRecord,
  DeviceEntry,
  DirectoryRecord,
  QuotaAccountRecord,
  SourceFailureState,
  UpgradeIntentRecord,
} from '@strongroom/core';
import { emptyLedgerRecord } from '@strongroom/core/internal';

/** Bytes as both drivers hand them back (Buffer from better-sqlite3 and node-postgres, Uint8Array from PGlite). */
type Bytes = Uint8Array;
const u8 = (b: Bytes): Uint8Array => new Uint8Array(b);

export interface QuotaAccountRow {
  readonly charged: number;
  readonly reserved: number;
  /** 1 when an operator set the account's own limits (then null limits mean unlimited). */
  readonly customLimits: number;
  readonly softLimit: number | null;
  readonly hardLimit: number | null;
  readonly hardSince: number | null;
  readonly suspendedAt: number | null;
  readonly sponsorId: string | null;
  readonly trashActivityAt: number | null;
}

/** An account's ledger row; an account with no row has a zero one. */
export function quotaAccountFromRow(accountId: string, r: QuotaAccountRow | undefined | null): QuotaAccountRecord {
  if (!r) return emptyLedgerRecord(accountId);
  return {
    accountId,
    charged: r.charged,
    reserved: r.reserved,
    limits: r.customLimits ? { soft: r.softLimit, hard: r.hardLimit } : null,
    hardSince: r.hardSince,
    suspendedAt: r.suspendedAt,
    sponsorId: r.sponsorId,
    trashActivityAt: r.trashActivityAt,
  };
}

/**
 * An account row as the record: the deletion stamp only when there is one, so a live account reads
 * back exactly as it was written.
 */
export function accountFromRow<R extends AccountRecord & { readonly deletedAt: number | null }>(row: R): AccountRecord {
  const { deletedAt, ...live } = row;
  return deletedAt === null ? live : { ...live, deletedAt };
}

export interface AlbumRow {
  readonly id: string;
  readonly accountId: string;
  readonly protocolVersion: string;
  readonly createdAt: number;
  readonly intentId: string | null;
  readonly upgradePendingTo: string | null;
  readonly upgradeReceivedAt: number | null;
  readonly upgradeExpiresAt: number | null;
}

/** An album; its upgrade columns are all set (a live or lapsed intent) or all null. */
export function albumFromRow(r: AlbumRow): AlbumRecord {
  return {
    id: r.id,
    accountId: r.accountId,
    protocolVersion: r.protocolVersion,
    createdAt: r.createdAt,
    upgrade:
      r.intentId !== null && r.upgradePendingTo !== null && r.upgradeReceivedAt !== null && r.upgradeExpiresAt !== null
        ? {
            intentId: r.intentId,
            toVersion: r.upgradePendingTo,
            receivedAt: r.upgradeReceivedAt,
            expiresAt: r.upgradeExpiresAt,
          }
        : null,
  };
}

export type IntentRow = Omit<UpgradeIntentRecord, 'intentCbor'> & { readonly intentCbor: Bytes };

export function intentFromRow(r: IntentRow): UpgradeIntentRecord {
  return { ...r, intentCbor: u8(r.intentCbor) };
}

export interface DeviceRow {
  readonly deviceId: string;
  readonly ed25519: Bytes;
  readonly mldsa65: Bytes;
  readonly addedAt: number;
}

export function deviceFromRow(r: DeviceRow): DeviceEntry {
  return { deviceId: r.deviceId, ed25519: u8(r.ed25519), mldsa65: u8(r.mldsa65), addedAt: r.addedAt };
}

export interface DirectoryRow {
  readonly identityKey: Bytes;
  readonly seq: number;
  readonly body: Bytes;
  readonly acceptedAt: number;
}

export function directoryFromRows(accountId: string, r: DirectoryRow, devices: readonly DeviceRow[]): DirectoryRecord {
  return {
    accountId,
    identityKey: u8(r.identityKey),
    seq: r.seq,
    devices: devices.map(deviceFromRow),
    body: u8(r.body),
    acceptedAt: r.acceptedAt,
  };
}

/**
 * `('a', 'b')` from core's own list (e.g. OPEN_STATES), for the WHERE clauses that make a decision's
 * read fast; the decision itself stays in core. The values are our own constants, never input.
 */
export function sqlStringList(values: readonly string[]): string {
  return `(${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ')})`;
}

/**
 * Core's in-flight predicate (OPEN_STATES) as the one SQL list every store's WHERE uses: no adapter
 * spells the open states itself. A session in one of these states whose expiry has passed is
 * expired, so each statement pairs it with its `expires_at` test, as core's isInFlight does.
 */
export const OPEN_STATE_SQL = sqlStringList(OPEN_STATES);

/**
 * The sign-in counts' keys: an address's count under the hash core gives it (tried addresses are
 * never kept in clear), a client address's under its own key; the prefixes keep the two apart.
 */
export const signInAddressCountKey = (key: string): string => `a:${addressCountKey(key)}`;
export const signInSourceCountKey = (key: string): string => `s:${key}`;

/** A stored address count, or null when the row holds none (a row made only to be locked holds `{}`). */
export function addressGuessFromJson(json: string): AddressGuessState | null {
  const s = JSON.parse(json) as Partial<AddressGuessState>;
  return Array.isArray(s.wrongAt)
    ? { wrongAt: s.wrongAt, strikes: s.strikes ?? 0, lastStrikeAt: s.lastStrikeAt ?? null }
    : null;
}

/** A stored client-address count, or null when the row holds none. */
export function sourceFailuresFromJson(json: string): SourceFailureState | null {
  const s = JSON.parse(json) as Partial<SourceFailureState>;
  return Array.isArray(s.failedAt) ? { failedAt: s.failedAt } : null;
}
