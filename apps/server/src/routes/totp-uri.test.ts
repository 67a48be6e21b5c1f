import { parse } from '@otplib/uri';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../config.js';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';

// The URI is checked with @otplib/uri, a parser written apart from the otpauth library that builds it.

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

async function enrollUri(env: Record<string, string>): Promise<{ uri: string; address: string }> {
  s = await testServer(env);
  const user = await registerUser(s.app);
  const r = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
  expect(r.status).toBe(200);
  return { uri: r.body.uri as string, address: user.address };
}

/** Splits the label as authenticator apps do: at the first colon (encoded or not), issuer before it. */
function labelParts(label: string): { issuer: string; account: string } {
  const at = label.indexOf(':');
  return { issuer: label.slice(0, at), account: label.slice(at + 1) };
}

describe('the otpauth:// URI', () => {
  it('on a non-default port names the host alone, the same in the label and the parameter', async () => {
    const { uri, address } = await enrollUri({ SVC_BASE_URL: 'https://photos.example.org:8443' });
    const parsed = parse(uri);
    expect(parsed.type).toBe('totp');
    expect(parsed.params.issuer).toBe('photos.example.org');
    expect(labelParts(parsed.label)).toEqual({ issuer: 'photos.example.org', account: address });
    expect(parsed.params).toMatchObject({ algorithm: 'sha1', digits: 6, period: 30 });
    expect(parsed.params.secret).toMatch(/^[A-Z2-7]+$/);
    expect(uri).not.toMatch(/8443/);
  });

  it('takes SVC_TOTP_ISSUER when set, spaces and all', async () => {
    const { uri, address } = await enrollUri({
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_TOTP_ISSUER: 'Family Photos',
    });
    const parsed = parse(uri);
    expect(parsed.params.issuer).toBe('Family Photos');
    expect(labelParts(parsed.label)).toEqual({ issuer: 'Family Photos', account: address });
  });

  it('refuses to start with an issuer that holds a colon, or none to derive', () => {
    expect(() => readConfig({ SVC_TOTP_ISSUER: 'photos:8443' })).toThrow(ConfigError);
    expect(() => readConfig({ SVC_TOTP_ISSUER: 'photos:8443' })).toThrow('SVC_TOTP_ISSUER');
    expect(() => readConfig({ SVC_BASE_URL: 'http://[::1]:8080' })).toThrow('SVC_TOTP_ISSUER');
    expect(readConfig({ SVC_BASE_URL: 'http://[::1]:8080', SVC_TOTP_ISSUER: 'home' }).totpIssuer).toBe('home');
    expect(readConfig({ SVC_BASE_URL: 'https://photos.example.org:8443' }).totpIssuer).toBe('photos.example.org');
  });
});
