import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A person at the test provider. */
export interface TestPerson {
  readonly sub: string;
  readonly email?: string;
  readonly emailVerified?: boolean;
  readonly name?: string;
}

/** What the automated login page does with the next interaction. */
type NextStep = { kind: 'login'; person: TestPerson } | { kind: 'deny' };

export interface TestProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string | null;
  /** The next time the provider asks the person to log in, this person does (or the person refuses). */
  willSignIn(person: TestPerson): void;
  willDeny(): void;
  /** Signs an ID token with the provider's own key (for tampered token responses). */
  sign(claims: Record<string, unknown>): Promise<string>;
  /** A fetch that rewrites the ID token in token responses through `edit` (then stops). */
  tamperingFetch(
    edit: (claims: Record<string, unknown>) => Record<string, unknown>,
    signer?: (claims: Record<string, unknown>) => Promise<string>,
  ): typeof fetch;
  close(): Promise<void>;
}

/**
 * oidc-provider (panva) on a loopback port, with its login and consent pages replaced by an
 * automated one: each interaction logs in the person set with `willSignIn` and grants the scopes
 * asked for, or refuses with `access_denied`. No browser: the test follows redirects itself
 * (see {@link Browser}).
 */
export async function startTestProvider(options: {
  redirectUris: string[];
  clientSecret?: string | null;
  port?: number;
  kid?: string;
}): Promise<TestProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: options.kid ?? 'test-key-1', alg: 'RS256', use: 'sig' };
  const people = new Map<string, TestPerson>();
  let next: NextStep | null = null;
  const clientId = 'strongroom-test';
  const clientSecret = options.clientSecret === undefined ? 'test-client-secret-0123456789' : options.clientSecret;

  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        ...(clientSecret === null
          ? { token_endpoint_auth_method: 'none' }
          : { client_secret: clientSecret, token_endpoint_auth_method: 'client_secret_basic' }),
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    findAccount: async (_ctx: unknown, sub: string) => {
      const person = people.get(sub);
      if (!person) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          ...(person.email !== undefined ? { email: person.email, email_verified: person.emailVerified ?? false } : {}),
          ...(person.name !== undefined ? { name: person.name } : {}),
        }),
      };
    },
  });

  const handle = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/interaction/')) return void handle(req, res);
    void (async () => {
      try {
        const details = await provider.interactionDetails(req, res);
        const step = next;
        next = null;
        if (step === null || step.kind === 'deny') {
          await provider.interactionFinished(
            req,
            res,
            { error: 'access_denied', error_description: 'The person said no.' },
            { mergeWithLastSubmission: false },
          );
          return;
        }
        people.set(step.person.sub, step.person);
        const grant = new provider.Grant({ accountId: step.person.sub, clientId: details.params.client_id });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: step.person.sub }, consent: { grantId } },
          { mergeWithLastSubmission: false },
        );
      } catch (e) {
        res.statusCode = 500;
        res.end(String(e));
      }
    })();
  });

  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: jwk.kid!, typ: 'JWT' }).sign(privateKey);

  return {
    issuer,
    clientId,
    clientSecret,
    willSignIn: (person) => void (next = { kind: 'login', person }),
    willDeny: () => void (next = { kind: 'deny' }),
    sign,
    tamperingFetch(edit, signer = sign) {
      let armed = true;
      return async (input, init) => {
        const res = await fetch(input, init);
        const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
        if (!armed || !url.endsWith('/token') || res.status !== 200) return res;
        armed = false;
        const body = (await res.json()) as Record<string, unknown>;
        const header = decodeProtectedHeader(String(body.id_token));
        if (header.kid !== jwk.kid) throw new Error('unexpected signing key');
        body.id_token = await signer(edit(decodeJwt(String(body.id_token)) as Record<string, unknown>));
        return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A cookie-keeping user agent that follows the provider's redirects until it is sent to `stopAt`
 * (this server's callback), and returns that URL instead of following it.
 */
export class Browser {
  readonly #cookies = new Map<string, string>();

  async follow(url: string, stopAt: string): Promise<URL> {
    let at = url;
    for (let hops = 0; hops < 20; hops++) {
      if (at.startsWith(stopAt)) return new URL(at);
      const res = await fetch(at, {
        redirect: 'manual',
        headers: { cookie: [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair!.indexOf('=');
        const name = pair!.slice(0, eq).trim();
        const value = pair!.slice(eq + 1).trim();
        if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.#cookies.delete(name);
        else this.#cookies.set(name, value);
      }
      const location = res.headers.get('location');
      if (location === null) throw new Error(`the provider stopped at ${at} with ${res.status}: ${await res.text()}`);
      await res.arrayBuffer().catch(() => undefined);
      at = new URL(location, at).toString();
    }
    throw new Error('too many redirects');
  }
}
