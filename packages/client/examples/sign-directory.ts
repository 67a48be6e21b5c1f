/**
 * Prints (to stdout, as bytes) a first signed device directory for an account: a fresh identity
 * key and one device with fresh Ed25519 and ML-DSA-65 keys, the device added a minute ago. The
 * curl tour (docs/tour.md) pipes it into `PUT /v1/devices/directory`, since albums and uploads
 * come only from a device of the account's directory and shell tools cannot make these keys.
 * The private keys are not kept: enough for a walk-through, not for an app (which keeps them).
 *
 *   node --conditions=@strongroom/source --import tsx packages/client/examples/sign-directory.ts <account_id> <device_id>
 */
import { DeviceKeys, IdentityKey } from '@strongroom/client';

const [accountId, deviceId] = process.argv.slice(2);
if (!accountId || !deviceId) {
  process.stderr.write('usage: sign-directory.ts <account_id> <device_id>\n');
  process.exit(2);
}
const device = DeviceKeys.generate(deviceId);
process.stdout.write(
  IdentityKey.generate().signDirectory(accountId, 1, [device.entry(Math.floor(Date.now() / 1000) - 60)]),
);
