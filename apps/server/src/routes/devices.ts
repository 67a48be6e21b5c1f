import * as v from 'valibot';
import { toBase64url } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { bytes, iso, json, unwrap } from '../http/respond.js';
import { Count, Timestamp } from './schemas.js';

const DIRECTORY_CBOR =
  'Signed device directory, canonical CBOR: {"identity_key": bstr32, "seq": uint, "devices": [{"device_id": tstr, "ed25519": bstr32, ' +
  '"mldsa65": bstr1952, "added_at": uint (unix s)}], "sig": bstr64}; sig is the identity key\'s Ed25519 signature over canonical CBOR ' +
  '["svc-device-directory/v1", account_id, identity_key, seq, devices]. seq rises by 1 to 1000000 per publication (the first counts from 0); ' +
  'a larger jump is 400 error.request.invalid, a seq not above the stored one 409 error.conflict.';

const B64 = v.pipe(v.string(), v.description('unpadded base64url'));

/** The device directory (identity anchor) and the revoke-all proof. */
export function deviceRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'PUT',
      path: '/v1/devices/directory',
      tag: 'devices',
      summary:
        'Publish the signed device directory (the first one fixes the identity anchor and needs a recent sign-in)',
      auth: true,
      body: { type: 'cbor', description: DIRECTORY_CBOR },
      responses: {
        200: {
          description: 'Accepted; GET now returns exactly these bytes',
          name: 'DirectoryAccepted',
          schema: v.object({ seq: Count, identity_key: B64, devices: Count, accepted_at: Timestamp }),
        },
      },
      errors: [
        'error.request.invalid',
        'error.device.invalid_key',
        'error.device.directory_invalid',
        'error.conflict',
        'error.auth.reauthentication_required',
        'error.sponsored.no_identity',
      ],
      handle: async ({ c, body, principal }) => {
        const d = unwrap(await deps.devices.publish(principal, body));
        return json(c, 200, {
          seq: d.seq,
          identity_key: toBase64url(d.identityKey),
          devices: d.devices.length,
          accepted_at: iso(d.acceptedAt),
        });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/devices/directory',
      tag: 'devices',
      summary: 'The latest accepted directory, as the signed CBOR that was accepted',
      auth: true,
      responses: {
        200: {
          description: 'The stored signed directory',
          contentType: 'application/cbor',
          schema: v.pipe(v.string(), v.description(DIRECTORY_CBOR)),
        },
      },
      errors: ['error.not_found'],
      handle: async ({ c, principal }) => {
        const d = await deps.devices.current(principal.accountId);
        if (d === null) throw new HttpProblem('error.not_found', 'This account has not published a device directory.');
        return bytes(c, 200, d.body, 'application/cbor');
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/logout/all/challenge',
      tag: 'auth',
      summary: 'A single-use challenge (32 bytes, 300 s) for the revoke-all proof; at most 5 live per account',
      auth: true,
      write: false,
      body: { type: 'empty' },
      responses: {
        200: {
          description: 'The challenge',
          name: 'LogoutAllChallenge',
          schema: v.object({ challenge: B64, expires_in: v.literal(300) }),
        },
      },
      errors: ['error.request.too_many'],
      handle: async ({ c, principal }) => {
        const r = unwrap(await deps.revokeAll.issueChallenge(principal.accountId));
        return json(c, 200, { challenge: r.challenge, expires_in: r.expiresIn });
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/logout/all',
      tag: 'auth',
      summary:
        "Close every session of the account with the identity key's signature over a challenge (no session needed)",
      auth: false,
      write: false,
      body: {
        type: 'json',
        name: 'LogoutAllRequest',
        schema: v.strictObject({
          challenge: B64,
          signature: v.pipe(
            v.string(),
            v.description(
              'base64url Ed25519 signature by the identity anchor over canonical CBOR ["svc-logout-all/v1", account_id, challenge_bytes]',
            ),
          ),
        }),
      },
      responses: {
        200: {
          description: 'Every session of the account is closed',
          name: 'LogoutAllResult',
          schema: v.object({ sessions_closed: Count }),
        },
      },
      errors: ['error.auth.proof_invalid', 'error.request.invalid'],
      handle: async ({ c, body }) => {
        const r = unwrap(await deps.revokeAll.redeem({ challenge: body.challenge, signature: body.signature }));
        return json(c, 200, { sessions_closed: r.sessionsClosed });
      },
    }),
  ];
}
