import fc from 'fast-check';
import { OidcService } from '../../oidc/service.js';
import { sha256, toBase64url, utf8 } from '../../encoding/bytes.js';
import { DEFAULT_PROTOCOL_WINDOW } from '../../versioning/protocol.js';
import { FLOW_TTL_MS, LOGIN_CODE_TTL_MS } from '../../oidc/rules.js';
import type { Ports } from '../../ports/ports.js';
import { TotpSecretBox } from '../../totp/secret-box.js';
import { FakeClock } from '../fake-clock.js';
import { FakeIdentityProvider } from '../fake-identity-provider.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

const RETURN_TO = 'https://app.example/done';
/** The app's PKCE pair toward the server: every flow carries the challenge, every completion the verifier. */
const APP_VERIFIER = 'model-app-verifier-'.padEnd(43, 'v');
const APP_CHALLENGE = toBase64url(sha256(utf8(APP_VERIFIER)));
const SUBJECTS = ['alice', 'bob', 'carol'];

interface ModelFlow {
  state: string;
  startedAt: number;
  used: boolean;
}
interface ModelCode {
  code: string;
  issuedAt: number;
  used: boolean;
  subject: string;
}
interface Model {
  now: number;
  flows: ModelFlow[];
  codes: ModelCode[];
  /** Accounts the model expects per subject (first sign-in creates, later ones reuse). */
  accounts: Map<string, string>;
}
interface Real {
  oidc: OidcService;
  provider: FakeIdentityProvider;
  clock: FakeClock;
  authenticate: (accessToken: string) => Promise<string | null>;
}

class Start implements fc.AsyncCommand<Model, Real> {
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const started = await r.oidc.start({ returnTo: RETURN_TO, purpose: 'sign_in', appChallenge: APP_CHALLENGE }, null);
    check(started.ok, 'start refused');
    if (!started.ok) return;
    const state = new URL(started.value.authorizationUrl).searchParams.get('state')!;
    check(!m.flows.some((f) => f.state === state), 'a state was handed out twice');
    m.flows.push({ state, startedAt: m.now, used: false });
  }
  toString = (): string => 'start';
}

class Callback implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly subject: string,
  ) {}
  check = (m: Readonly<Model>): boolean => m.flows.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const flow = m.flows[this.pick % m.flows.length]!;
    const params = r.provider.signIn(flow.state, {
      subject: this.subject,
      email: `${this.subject}@example.org`,
      emailVerified: true,
    });
    const outcome = await r.oidc.callback(params);
    const redeemable = !flow.used && m.now < flow.startedAt + FLOW_TTL_MS;
    flow.used = true;
    if (!redeemable) {
      check(outcome.kind === 'state_invalid', `a used or expired state was accepted (${JSON.stringify(outcome)})`);
      return;
    }
    check(
      outcome.kind === 'redirect' && 'loginCode' in outcome,
      `a live state was refused (${JSON.stringify(outcome)})`,
    );
    if (outcome.kind === 'redirect' && 'loginCode' in outcome) {
      check(outcome.returnTo === RETURN_TO, 'the callback went elsewhere');
      m.codes.push({ code: outcome.loginCode, issuedAt: m.now, used: false, subject: this.subject });
    }
  }
  toString = (): string => `callback(${this.pick}, ${this.subject})`;
}

class Complete implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>): boolean => m.codes.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const code = m.codes[this.pick % m.codes.length]!;
    const result = await r.oidc.complete(
      { loginCode: code.code, appVerifier: APP_VERIFIER, cohortHash: null, version: DEFAULT_PROTOCOL_WINDOW.max },
      null,
    );
    const redeemable = !code.used && m.now < code.issuedAt + LOGIN_CODE_TTL_MS;
    code.used = true;
    if (!redeemable) {
      check(
        !result.ok && result.code === 'error.auth.login_code_invalid',
        `a used or expired login code was redeemed (${JSON.stringify(result)})`,
      );
      return;
    }
    check(result.ok && result.value.kind === 'session', `a live login code was refused (${JSON.stringify(result)})`);
    if (result.ok && result.value.kind === 'session') {
      const accountId = await r.authenticate(result.value.pair.accessToken);
      check(accountId !== null, 'the minted session does not authenticate');
      const expected = m.accounts.get(code.subject);
      if (expected === undefined) m.accounts.set(code.subject, accountId!);
      else check(expected === accountId, 'a second sign-in landed on another account');
    }
  }
  toString = (): string => `complete(${this.pick})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
  }
  toString = (): string => `advance(${this.ms})`;
}

/**
 * The OpenID flow as a model-based property: random sequences of start, callback (replays of used
 * states included), complete (replays included) and clock advances across both lifetimes. After
 * every step, the real service agrees with the model: a state or a login code is redeemed at most
 * once and never after its lifetime, and every subject keeps landing on one account.
 */
export function oidcModelProperty(
  makePorts: () => Promise<Pick<Ports, 'accounts' | 'oidc'>>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>]> {
  const commands = [
    fc.constant(new Start()),
    fc.tuple(fc.nat(20), fc.constantFrom(...SUBJECTS)).map(([p, s]) => new Callback(p, s)),
    fc.nat(20).map((p) => new Complete(p)),
    fc.constantFrom(1_000, 30_000, 59_999, 1, 60_000, 300_000, 599_999).map((ms) => new Advance(ms)),
  ];
  return fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
    const ports = await makePorts();
    const clock = new FakeClock();
    const random = new SeededRandom(7);
    const logger = new MemoryLogger();
    const core = await createCoreServices({ store: ports.accounts, clock, random, hasher: new PlainHasher(), logger });
    const provider = new FakeIdentityProvider('https://idp.example', () => clock.now());
    const oidc = new OidcService({
      provider,
      flows: ports.oidc,
      links: ports.oidc,
      accounts: ports.accounts,
      sessions: core.sessions,
      registration: core.registration,
      sealer: new TotpSecretBox({ key: new Uint8Array(32).fill(9), random }),
      clock,
      random,
      logger,
      returnUris: [RETURN_TO],
      localSignIn: true,
      window: DEFAULT_PROTOCOL_WINDOW,
    });
    const authenticate = async (token: string): Promise<string | null> => {
      const who = await core.sessions.authenticate(token);
      return who.ok ? who.value.accountId : null;
    };
    const model: Model = { now: clock.now(), flows: [], codes: [], accounts: new Map() };
    await fc.asyncModelRun(() => ({ model, real: { oidc, provider, clock, authenticate } }), cmds);
  });
}
