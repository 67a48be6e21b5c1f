import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from './config.js';

const OIDC = {
  SVC_OIDC_ISSUER: 'https://idp.example',
  SVC_OIDC_CLIENT_ID: 'photos',
  SVC_OIDC_RETURN_URIS: 'https://photos.example/done,com.example.photos:/oauth',
};

describe('OpenID Connect and local sign-in configuration', () => {
  it('is off by default, with local sign-in on', () => {
    const c = readConfig({});
    expect(c.oidc).toBeNull();
    expect(c.authLocal).toBe(true);
  });

  it('reads the provider, defaulting to a public client and the openid email profile scopes', () => {
    expect(readConfig(OIDC).oidc).toEqual({
      issuer: 'https://idp.example',
      clientId: 'photos',
      clientSecret: null,
      returnUris: ['https://photos.example/done', 'com.example.photos:/oauth'],
      scopes: 'openid email profile',
    });
    const c = readConfig({
      ...OIDC,
      SVC_OIDC_CLIENT_SECRET: 's3cret',
      SVC_OIDC_SCOPES: 'openid  email',
      SVC_AUTH_LOCAL: 'false',
    });
    expect(c.oidc).toMatchObject({ clientSecret: 's3cret', scopes: 'openid email' });
    expect(c.authLocal).toBe(false);
  });

  it.each([
    [{ SVC_AUTH_LOCAL: 'no' }, 'SVC_AUTH_LOCAL'],
    [{ ...OIDC, SVC_OIDC_ISSUER: 'http://idp.example' }, 'SVC_OIDC_ISSUER'],
    [{ ...OIDC, SVC_OIDC_ISSUER: 'not a url' }, 'SVC_OIDC_ISSUER'],
    [{ ...OIDC, SVC_OIDC_CLIENT_ID: '' }, 'SVC_OIDC_CLIENT_ID'],
    [{ ...OIDC, SVC_OIDC_RETURN_URIS: '' }, 'SVC_OIDC_RETURN_URIS'],
    [{ ...OIDC, SVC_OIDC_RETURN_URIS: 'javascript:alert(1)' }, 'SVC_OIDC_RETURN_URIS'],
    [{ ...OIDC, SVC_OIDC_RETURN_URIS: 'http://photos.example/done' }, 'SVC_OIDC_RETURN_URIS'],
    [{ ...OIDC, SVC_OIDC_SCOPES: 'email profile' }, 'SVC_OIDC_SCOPES'],
  ])('refuses to start on a bad value, naming the variable (%o)', (env, name) => {
    expect(() => readConfig(env)).toThrow(ConfigError);
    expect(() => readConfig(env)).toThrow(name);
  });

  it('accepts an http issuer and return URI on loopback only (development)', () => {
    const c = readConfig({
      ...OIDC,
      SVC_OIDC_ISSUER: 'http://127.0.0.1:9000',
      SVC_OIDC_RETURN_URIS: 'http://127.0.0.1:3000/done',
    });
    expect(c.oidc?.issuer).toBe('http://127.0.0.1:9000');
  });

  it('never echoes the client secret in an error', () => {
    try {
      readConfig({ ...OIDC, SVC_OIDC_CLIENT_SECRET: 'very-secret-value', SVC_OIDC_SCOPES: 'email' });
    } catch (e) {
      expect(String(e)).not.toContain('very-secret-value');
    }
  });
});
