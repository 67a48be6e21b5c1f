import { canonicalCbor, decodeCanonicalCbor } from '../encoding/cbor.js';
import { ok, refuse, type Result } from '../errors.js';
import { constantTimeEqual } from '../encoding/bytes.js';
import type { DeviceEntry, DirectoryRecord, PublishOutcome } from '../ports/device-directory.js';
import { isAcceptableEd25519Key, isAcceptableMlDsa65Key, verifyEd25519 } from '../proofs/signatures.js';
import { isRecord, isWholeNumber } from './shape.js';

export const DIRECTORY_DOMAIN = 'svc-device-directory/v1';

/** A device id: 1 to 128 visible ASCII characters (it travels in JSON bodies and logs). */
export const DEVICE_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;
const DEVICE_ID = DEVICE_ID_PATTERN;

export function isDeviceId(value: unknown): value is string {
  return typeof value === 'string' && DEVICE_ID.test(value);
}

/** The signed parts of a directory before it is bound to an account and a time. */
export interface ParsedDirectory {
  readonly identityKey: Uint8Array;
  readonly seq: number;
  readonly devices: readonly DeviceEntry[];
  /** The devices array exactly as decoded, re-encoded into the signed message. */
  readonly rawDevices: unknown[];
  readonly sig: Uint8Array;
}

const bytesOf = (v: unknown, length?: number): v is Uint8Array =>
  v instanceof Uint8Array && (length === undefined || v.length === length);
const exactKeys = (v: Record<string, unknown>, keys: readonly string[]): boolean =>
  Object.keys(v).length === keys.length && keys.every((k) => Object.hasOwn(v, k));

/** The bytes the identity key signs: canonical CBOR of the domain-separated array. */
export function directorySigningMessage(
  accountId: string,
  identityKey: Uint8Array,
  seq: number,
  devices: unknown[],
): Uint8Array {
  return canonicalCbor([DIRECTORY_DOMAIN, accountId, identityKey, seq, devices]);
}

/**
 * Parses a signed directory body. Structure first (anything malformed or non-canonical is
 * `error.request.invalid`), then key policy (`error.device.invalid_key`). The signature is checked
 * by {@link acceptDirectory}, which knows the account.
 */
export function parseDirectory(
  body: Uint8Array,
): Result<ParsedDirectory, 'error.request.invalid' | 'error.device.invalid_key'> {
  const value = decodeCanonicalCbor(body);
  const malformed = (why: string) => refuse('error.request.invalid', `The directory is malformed: ${why}.`);
  if (!isRecord(value) || !exactKeys(value, ['identity_key', 'seq', 'devices', 'sig']))
    return malformed('expected exactly identity_key, seq, devices, sig');
  const { identity_key: identityKey, seq, devices, sig } = value;
  if (!bytesOf(identityKey)) return malformed('identity_key must be a byte string');
  if (!isWholeNumber(seq)) return malformed('seq must be a whole number');
  if (!bytesOf(sig, 64)) return malformed('sig must be 64 bytes');
  if (!Array.isArray(devices)) return malformed('devices must be an array');
  const entries: DeviceEntry[] = [];
  const seen = new Set<string>();
  for (const d of devices) {
    if (!isRecord(d) || !exactKeys(d, ['device_id', 'ed25519', 'mldsa65', 'added_at']))
      return malformed('a device needs exactly device_id, ed25519, mldsa65, added_at');
    if (!isDeviceId(d.device_id)) return malformed('device_id must be 1 to 128 visible ASCII characters');
    if (seen.has(d.device_id)) return malformed(`device ${d.device_id} is listed twice`);
    seen.add(d.device_id);
    if (!bytesOf(d.ed25519) || !bytesOf(d.mldsa65)) return malformed('device keys must be byte strings');
    if (!isWholeNumber(d.added_at)) return malformed('added_at must be a whole number');
    entries.push({ deviceId: d.device_id, ed25519: d.ed25519, mldsa65: d.mldsa65, addedAt: d.added_at });
  }
  if (!isAcceptableEd25519Key(identityKey))
    return refuse('error.device.invalid_key', 'The identity key is not an acceptable Ed25519 key.');
  for (const e of entries) {
    if (!isAcceptableEd25519Key(e.ed25519))
      return refuse(
        'error.device.invalid_key',
        `Device ${e.deviceId}: the Ed25519 key is of small order, non-canonical or not 32 bytes.`,
      );
    if (!isAcceptableMlDsa65Key(e.mldsa65))
      return refuse(
        'error.device.invalid_key',
        `Device ${e.deviceId}: the ML-DSA-65 key is not a 1,952-byte key that key generation could have made.`,
      );
  }
  return ok({ identityKey, seq, devices: entries, rawDevices: devices, sig });
}

/** Checks the self-signature and binds the directory to its account and acceptance time. */
export function acceptDirectory(
  accountId: string,
  body: Uint8Array,
  now: number,
): Result<DirectoryRecord, 'error.request.invalid' | 'error.device.invalid_key' | 'error.device.directory_invalid'> {
  const parsed = parseDirectory(body);
  if (!parsed.ok) return parsed;
  const { identityKey, seq, devices, rawDevices, sig } = parsed.value;
  if (!verifyEd25519(identityKey, directorySigningMessage(accountId, identityKey, seq, rawDevices), sig)) {
    return refuse(
      'error.device.directory_invalid',
      'The directory signature does not verify under its identity key for this account.',
    );
  }
  return ok({ accountId, identityKey, seq, devices, body: body.slice(), acceptedAt: now });
}

/** A device may write once listed with `added_at` (unix seconds) not after the server's clock. */
export function isDeviceActive<D extends Pick<DeviceEntry, 'addedAt'>>(device: D | null, now: number): device is D {
  return device !== null && device.addedAt * 1000 <= now;
}

/**
 * How far one publication may raise `seq` (the first counts from 0). Without a bound a single
 * publication at 2^53-1 would leave no higher whole number any client can write, freezing the
 * directory (and with it the devices and the anchor's key rotation) for good.
 */
export const MAX_DIRECTORY_SEQ_STEP = 1_000_000;

/**
 * The compare-and-set a store applies inside its transaction when a directory is published: the
 * first one fixes the identity anchor; later ones must repeat it (checked first) and raise `seq`,
 * by at most {@link MAX_DIRECTORY_SEQ_STEP}.
 */
export function decidePublication(
  current: Pick<DirectoryRecord, 'identityKey' | 'seq'> | null,
  incoming: Pick<DirectoryRecord, 'identityKey' | 'seq'>,
): PublishOutcome {
  if (current === null) return incoming.seq > MAX_DIRECTORY_SEQ_STEP ? 'seq_jump' : 'published';
  if (!constantTimeEqual(current.identityKey, incoming.identityKey)) return 'anchor_mismatch';
  if (incoming.seq <= current.seq) return 'stale_seq';
  if (incoming.seq - current.seq > MAX_DIRECTORY_SEQ_STEP) return 'seq_jump';
  return 'published';
}
