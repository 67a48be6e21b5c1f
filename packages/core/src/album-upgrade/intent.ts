import { canonicalCbor, decodeCanonicalCbor } from '../encoding/cbor.js';
import { isUuidV7 } from '../encoding/uuid.js';
import { ok, refuse, type Result } from '../errors.js';
import type { DeviceEntry } from '../ports/device-directory.js';
import { verifyEd25519, verifyMlDsa65 } from '../proofs/signatures.js';
import { isDeviceId } from '../devices/directory.js';
import { isRecord, isWholeNumber } from '../devices/shape.js';
import { isProtocolVersion, type ProtocolWindow } from '../versioning/protocol.js';
import { DEFAULT_UPGRADE_DEADLINE_S, MAX_UPGRADE_DEADLINE_S } from './server.js';

export const UPGRADE_INTENT_DOMAIN = 'svc-upgrade-intent/v1';

/** The UpgradeIntent (spec §14.6) as signed by the proposing device. */
export interface UpgradeIntent {
  readonly albumId: string;
  readonly fromVersion: string;
  readonly toVersion: string;
  readonly intentId: string;
  readonly proposerDevice: string;
  /** `deadline_s`, 604800 when the intent leaves it out. */
  readonly deadlineS: number;
}

export interface SignedUpgradeIntent {
  readonly intent: UpgradeIntent;
  /** The intent map exactly as signed, canonical CBOR (the idempotency comparison uses it). */
  readonly intentCbor: Uint8Array;
  /** The signed message: canonical CBOR of ["svc-upgrade-intent/v1", intent]. */
  readonly message: Uint8Array;
  readonly sigEd25519: Uint8Array;
  readonly sigMlDsa65: Uint8Array;
}

const REQUIRED = ['album_id', 'from_version', 'to_version', 'intent_id', 'proposer_device'] as const;

/**
 * Structure and bounds: every malformed or non-canonical body is `error.request.invalid`, and so is
 * an intent the server could not honour or represent: a deadline past 90 days (an intent holding an
 * album that long is a stuck album, and its expiry must stay a date every store and `Date` can hold),
 * or a `to_version` outside the server's window (no member could ever write at it here).
 */
export function parseSignedUpgradeIntent(
  body: Uint8Array,
  window: ProtocolWindow,
): Result<SignedUpgradeIntent, 'error.request.invalid'> {
  const bad = (why: string) => refuse('error.request.invalid', `The signed upgrade intent is malformed: ${why}.`);
  const value = decodeCanonicalCbor(body);
  if (!isRecord(value)) return bad('expected a map');
  const keys = Object.keys(value).sort();
  if (keys.join() !== 'intent,sig_ed25519,sig_mldsa65') return bad('expected exactly intent, sig_ed25519, sig_mldsa65');
  const { intent, sig_ed25519: sigEd25519, sig_mldsa65: sigMlDsa65 } = value;
  if (!(sigEd25519 instanceof Uint8Array) || !(sigMlDsa65 instanceof Uint8Array))
    return bad('signatures must be byte strings');
  if (!isRecord(intent)) return bad('intent must be a map');
  const allowed = new Set<string>([...REQUIRED, 'deadline_s']);
  if (Object.keys(intent).some((k) => !allowed.has(k)) || REQUIRED.some((k) => !Object.hasOwn(intent, k))) {
    return bad('intent needs album_id, from_version, to_version, intent_id, proposer_device and optionally deadline_s');
  }
  const { album_id, from_version, to_version, intent_id, proposer_device, deadline_s } = intent;
  if (typeof album_id !== 'string' || !isUuidV7(album_id)) return bad('album_id must be a UUIDv7');
  if (typeof intent_id !== 'string' || !isUuidV7(intent_id)) return bad('intent_id must be a UUIDv7');
  if (typeof from_version !== 'string' || !isProtocolVersion(from_version))
    return bad('from_version must be a protocol version');
  if (typeof to_version !== 'string' || !isProtocolVersion(to_version))
    return bad('to_version must be a protocol version');
  if (to_version < window.min || to_version > window.max)
    return bad(`to_version must lie within this server's window, ${window.min} to ${window.max}`);
  if (!isDeviceId(proposer_device)) return bad('proposer_device must be a device id');
  // Present means a whole number: CBOR's `undefined` (0xf7) under the key is not "absent".
  const hasDeadline = Object.hasOwn(intent, 'deadline_s');
  if (hasDeadline && !isWholeNumber(deadline_s)) return bad('deadline_s must be a whole number');
  if (hasDeadline && (deadline_s as number) > MAX_UPGRADE_DEADLINE_S)
    return bad(`deadline_s must be at most ${MAX_UPGRADE_DEADLINE_S} (90 days)`);
  return ok({
    intent: {
      albumId: album_id,
      fromVersion: from_version,
      toVersion: to_version,
      intentId: intent_id,
      proposerDevice: proposer_device,
      deadlineS: hasDeadline ? (deadline_s as number) : DEFAULT_UPGRADE_DEADLINE_S,
    },
    intentCbor: canonicalCbor(intent),
    message: upgradeIntentMessage(intent),
    sigEd25519,
    sigMlDsa65,
  });
}

/** Both signatures cover this: canonical CBOR of the domain-separated array around the intent map. */
export function upgradeIntentMessage(intentMap: Record<string, unknown>): Uint8Array {
  return canonicalCbor([UPGRADE_INTENT_DOMAIN, intentMap]);
}

/** Hybrid: both the Ed25519 and the ML-DSA-65 signature must verify under the proposer's keys. */
export function verifyHybrid(signed: SignedUpgradeIntent, proposer: DeviceEntry): boolean {
  const classical = verifyEd25519(proposer.ed25519, signed.message, signed.sigEd25519);
  const postQuantum = verifyMlDsa65(proposer.mldsa65, signed.message, signed.sigMlDsa65);
  return classical && postQuantum;
}
