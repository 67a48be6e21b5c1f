import { codeForStep, stepAt } from '@strongroom/core';
import { TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { fetchCall, PASSWORD, type CallOptions, type Reply } from '../http.js';
import { TusOffsets } from './tus-offsets.js';

/**
 * A mixed write load over the real HTTP API (sign-ins, refreshes, revocations, upload creations,
 * TOTP sign-ins, registrations) that remembers every write the server acknowledged, so that after a
 * crash, a restart or a database outage `verify()` can check each one is still there and that
 * nothing the server never acknowledged appeared. Used by the fault tests and by `bench/soak.ts`.
 *
 * Every answer is sorted into one of three outcomes:
 * - acknowledged: the expected 2xx (the write must survive anything);
 * - refused: an expected refusal (quota full), which must have changed nothing;
 * - unknown: no answer (the process died, the connection broke) or a store-unavailable 503/401,
 *   after which the write may or may not have happened, and the checks allow either.
 * Anything else (a 500, an open session refused, a replayed code accepted) is a violation.
 */

/** Deterministic randomness for the load; print the seed so a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Pair {
  session_id: string;
  session_token: string;
  access_token: string;
}

interface SessionRec {
  readonly id: string;
  readonly token: string;
  access: string;
  /** When `access` was issued (access tokens live 15 minutes). */
  accessAt?: number;
  /** `revoking`: a revocation was sent and got no answer; either state is then acceptable. */
  state: 'open' | 'revoking' | 'revoked';
}

/** An acknowledged reservation, and what resumable (tus) PATCHes sent to it may have left (tus-offsets.ts). */
interface TrackedUpload {
  readonly id: string;
  readonly tus: TusOffsets;
  busy: boolean;
}

interface Account {
  readonly address: string;
  readonly accountId: string;
  /** A session the load never revokes: it authenticates uploads, quota reads and revocations. */
  readonly home: SessionRec;
  readonly sessions: SessionRec[];
  readonly totp: Uint8Array | null;
  /** Highest step the server acknowledged accepting, and highest step ever sent (acknowledged or not). */
  ackedStep: number;
  sentStep: number;
  /** The acknowledged step the last `verify()` already replayed (each is replayed once). */
  checkedStep: number;
  busy: boolean;
  /** The latest acknowledged reservations, checked one by one (at most `maxTracked`). */
  readonly uploads: TrackedUpload[];
  /** Bytes of every acknowledged reservation, including those no longer tracked one by one. */
  ackedBytes: number;
  /** Bytes of upload creations that got no answer: the reservation may or may not exist. */
  unknownBytes: number;
}

export interface WorkloadStats {
  readonly acknowledged: number;
  readonly refused: number;
  readonly unknown: number;
  readonly violations: readonly string[];
  /** Per operation: how many were acknowledged. */
  readonly byOp: Readonly<Record<string, number>>;
}

export interface WorkloadOptions {
  readonly seed: number;
  /** Accounts without and with TOTP made by `setup()`. */
  readonly plainAccounts?: number;
  readonly totpAccounts?: number;
  /** Upload sizes are drawn from 1..maxUploadBytes. */
  readonly maxUploadBytes?: number;
  /** Sessions kept per account in the model (older ones are forgotten, keeping a soak's memory flat). */
  readonly maxSessions?: number;
  /** Reservations and registrations kept for one-by-one checks (a soak's `verify()` stays short). */
  readonly maxTracked?: number;
  /** Called with each request's latency in ms (the soak's percentiles). */
  readonly onLatency?: (ms: number) => void;
}

const UNAVAILABLE = new Set(['error.auth.unavailable', 'error.store.unavailable']);

export class MixedWorkload {
  /** Where the server is now; a restart on a new port updates it. */
  url = '';
  readonly #o: Required<Omit<WorkloadOptions, 'onLatency'>> & Pick<WorkloadOptions, 'onLatency'>;
  readonly #rand: () => number;
  readonly #accounts: Account[] = [];
  #acknowledged = 0;
  #refused = 0;
  #unknown = 0;
  readonly #violations: string[] = [];
  readonly #byOp: Record<string, number> = {};
  #n = 0;

  constructor(options: WorkloadOptions) {
    this.#o = { plainAccounts: 4, totpAccounts: 6, maxUploadBytes: 400, maxSessions: 12, maxTracked: 500, ...options };
    this.#rand = seededRandom(options.seed);
  }

  /**
   * The model as of now, frozen: what the server had acknowledged by this instant. A backup drill
   * takes one just before the backup begins and checks the restored copy against it, while this
   * load runs on (and its later writes may or may not be in the copy).
   */
  snapshot(): MixedWorkload {
    const copy = new MixedWorkload(this.#o);
    copy.url = this.url;
    for (const a of this.#accounts)
      copy.#accounts.push({
        ...structuredClone({ ...a, totp: null }),
        totp: a.totp === null ? null : new Uint8Array(a.totp),
        busy: false,
      });
    copy.#registered.push(...this.#registered);
    return copy;
  }

  stats(): WorkloadStats {
    return {
      acknowledged: this.#acknowledged,
      refused: this.#refused,
      unknown: this.#unknown,
      violations: [...this.#violations],
      byOp: { ...this.#byOp },
    };
  }

  /**
   * Resolves once `more` writes beyond those acknowledged now have been acknowledged: a fault test
   * lets the load do an amount of work, not run for a stretch of wall-clock time. Rejects after
   * `withinMs` (a server that stopped answering).
   */
  async acknowledgeMore(more: number, withinMs = 60_000): Promise<void> {
    const target = this.#acknowledged + more;
    const deadline = Date.now() + withinMs;
    while (this.#acknowledged < target) {
      if (Date.now() > deadline)
        throw new Error(`the load acknowledged ${this.#acknowledged} of ${target} writes in ${withinMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** A request whose failure to arrive is reported as null (the process died under it). */
  async #call(method: string, path: string, o: CallOptions = {}): Promise<Reply | null> {
    const started = performance.now();
    try {
      const reply = await fetchCall(this.url, method, path, o);
      this.#o.onLatency?.(performance.now() - started);
      return reply;
    } catch {
      return null;
    }
  }

  #violation(what: string, reply: Reply | null): void {
    this.#violations.push(`${what}: ${reply === null ? 'no answer' : `${reply.status} ${JSON.stringify(reply.body)}`}`);
  }

  /** Sorts an answer; `expected` statuses acknowledge, `refusals` are known no-ops. */
  #classify(
    op: string,
    reply: Reply | null,
    expected: number,
    refusals: string[] = [],
  ): 'ack' | 'refused' | 'unknown' | 'violation' {
    if (
      reply === null ||
      (reply.status >= 500 && UNAVAILABLE.has(reply.body?.code)) ||
      (reply.status === 401 && reply.body?.code === 'error.auth.unavailable')
    ) {
      this.#unknown++;
      return 'unknown';
    }
    if (reply.status === expected) {
      this.#acknowledged++;
      this.#byOp[op] = (this.#byOp[op] ?? 0) + 1;
      return 'ack';
    }
    if (refusals.includes(reply.body?.code)) {
      this.#refused++;
      return 'refused';
    }
    this.#violation(op, reply);
    return 'violation';
  }

  // ----- setup -------------------------------------------------------------------------------

  /** Registers the accounts, publishes a device for each, and enrolls TOTP on some. Throws on any failure. */
  async setup(): Promise<void> {
    const make = async (withTotp: boolean) => {
      const address = `load${this.#o.seed}-${++this.#n}@example.org`;
      const r = await this.#must('POST', '/v1/auth/register', { body: { address, password: PASSWORD } }, 200);
      const pair = r.body as Pair;
      const home: SessionRec = {
        id: pair.session_id,
        token: pair.session_token,
        access: pair.access_token,
        accessAt: Date.now(),
        state: 'open',
      };
      const token = pair.access_token;
      const accountId = (await this.#must('GET', '/v1/auth/profile', { token }, 200)).body.account_id as string;
      const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
      await this.#must('PUT', '/v1/devices/directory', { token, cbor: directory }, 200, 201, 204);
      let totp: Uint8Array | null = null;
      let step = 0;
      if (withTotp) {
        totp = totpSecretBytes((await this.#must('POST', '/v1/auth/totp/enroll', { token }, 200)).body.secret);
        // Confirmed with the previous step's code: the current and next steps stay free for the load.
        step = stepAt(Date.now()) - 1;
        await this.#must(
          'POST',
          '/v1/auth/totp/verify-enrollment',
          { token, body: { code: codeForStep(totp, step) } },
          204,
        );
      }
      this.#accounts.push({
        address,
        accountId,
        home,
        sessions: [],
        totp,
        ackedStep: step,
        sentStep: step,
        checkedStep: step,
        busy: false,
        uploads: [],
        ackedBytes: 0,
        unknownBytes: 0,
      });
    };
    for (let i = 0; i < this.#o.plainAccounts; i++) await make(false);
    for (let i = 0; i < this.#o.totpAccounts; i++) await make(true);
  }

  async #must(method: string, path: string, o: CallOptions, ...statuses: number[]): Promise<Reply> {
    const r = await this.#call(method, path, o);
    if (r === null || !statuses.includes(r.status))
      throw new Error(`setup ${method} ${path}: ${r === null ? 'no answer' : `${r.status} ${JSON.stringify(r.body)}`}`);
    return r;
  }

  // ----- the load ----------------------------------------------------------------------------

  /** `workers` concurrent loops of random operations until `signal` aborts. */
  async run(signal: AbortSignal, workers = 4): Promise<void> {
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (!signal.aborted) await this.step();
      }),
    );
  }

  #pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.#rand() * xs.length)];
  }

  /** One random operation. */
  async step(): Promise<void> {
    const roll = this.#rand();
    if (roll < 0.18) return this.#upload();
    if (roll < 0.25) return this.#append();
    if (roll < 0.45) return this.#refresh();
    if (roll < 0.6) return this.#login();
    if (roll < 0.75) return this.#revoke();
    if (roll < 0.95) return this.#totpSignIn();
    return this.#register();
  }

  #remember(account: Account, pair: Pair): void {
    account.sessions.push({ id: pair.session_id, token: pair.session_token, access: pair.access_token, state: 'open' });
    // Forget the oldest settled sessions beyond the cap (the server keeps them; the model need not).
    while (account.sessions.length > this.#o.maxSessions) {
      const i = account.sessions.findIndex((s) => s.state !== 'revoking');
      account.sessions.splice(Math.max(i, 0), 1);
    }
  }

  async #register(): Promise<void> {
    const address = `load${this.#o.seed}-${++this.#n}@example.org`;
    const r = await this.#call('POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
    // Only an acknowledged registration is checked (by signing in); its session is not tracked.
    if (this.#classify('register', r, 200) === 'ack') {
      this.#registered.push(address);
      if (this.#registered.length > this.#o.maxTracked) this.#registered.shift();
    }
  }
  readonly #registered: string[] = [];

  async #login(): Promise<void> {
    const account = this.#pick(this.#accounts.filter((a) => a.totp === null));
    if (!account) return;
    const r = await this.#call('POST', '/v1/auth/login', { body: { address: account.address, password: PASSWORD } });
    if (this.#classify('login', r, 200) === 'ack') this.#remember(account, r!.body as Pair);
  }

  async #refresh(): Promise<void> {
    const account = this.#pick(this.#accounts);
    if (!account) return;
    // Like a real client, the home session keeps its access token until it nears expiry
    // (`#homeToken`); the sessions refreshed here at random are the others.
    const session = this.#pick(account.sessions.filter((s) => s.state === 'open'));
    if (!session) return;
    const r = await this.#call('POST', '/v1/auth/refresh', { body: { session_token: session.token } });
    // A session revoked meanwhile by another worker answers 401: only an open one must refresh.
    if (r?.status === 401 && session.state !== 'open') return;
    if (this.#classify('refresh', r, 200) === 'ack') {
      session.access = r!.body.access_token;
      session.accessAt = Date.now();
    }
  }

  /** The home session's access token, refreshed first when it is ten minutes old (a long soak). */
  async #homeToken(account: Account): Promise<string> {
    const home = account.home;
    if (Date.now() - (home.accessAt ?? 0) > 600_000) {
      const r = await this.#call('POST', '/v1/auth/refresh', { body: { session_token: home.token } });
      if (this.#classify('refresh', r, 200) === 'ack') {
        home.access = r!.body.access_token;
        home.accessAt = Date.now();
      }
    }
    return home.access;
  }

  async #revoke(): Promise<void> {
    const account = this.#pick(this.#accounts);
    const session = account && this.#pick(account.sessions.filter((s) => s.state === 'open'));
    if (!account || !session) return;
    session.state = 'revoking';
    const r = await this.#call('DELETE', `/v1/auth/sessions/${session.id}`, { token: await this.#homeToken(account) });
    const outcome = this.#classify('revoke', r, 204);
    if (outcome === 'ack') session.state = 'revoked';
    else if (outcome === 'violation') session.state = 'open';
  }

  async #upload(): Promise<void> {
    const account = this.#pick(this.#accounts);
    if (!account) return;
    const size = 1 + Math.floor(this.#rand() * this.#o.maxUploadBytes);
    account.unknownBytes += size;
    const r = await this.#call('POST', '/upload', {
      token: await this.#homeToken(account),
      body: { declared_size: size, kind: 'original', device_id: 'phone' },
    });
    const outcome = this.#classify('upload', r, 201, ['error.quota.exceeded']);
    if (outcome === 'unknown') return;
    account.unknownBytes -= size;
    if (outcome === 'ack') {
      account.ackedBytes += size;
      account.uploads.push({ id: r!.body.upload_id as string, tus: new TusOffsets(size), busy: false });
      if (account.uploads.length > this.#o.maxTracked) account.uploads.shift();
    }
  }

  /**
   * A resumable (tus) PATCH of part of an upload's bytes at the offset the model holds: a 204 must
   * name exactly the offset plus what was sent. A 409 is the earlier unanswered PATCH having landed
   * (its header then names that offset) or, once every byte is in, the session taking no more.
   */
  async #append(): Promise<void> {
    const account = this.#pick(this.#accounts);
    const u = account && this.#pick(account.uploads.filter((x) => !x.busy && x.tus.offset < x.tus.size));
    if (!account || !u) return;
    u.busy = true;
    try {
      const at = u.tus.offset;
      const n = 1 + Math.floor(this.#rand() * (u.tus.size - at));
      const body = new Uint8Array(n).fill(at & 0xff);
      const headers = { 'tus-resumable': '1.0.0', 'upload-offset': String(at) };
      const r = await this.#call('PATCH', `/upload-tus/${u.id}`, {
        token: await this.#homeToken(account),
        raw: body,
        contentType: 'application/offset+octet-stream',
        headers,
      });
      const outcome = this.#classify('tus-patch', r, 204, ['error.conflict']);
      if (outcome === 'unknown') {
        u.tus.unanswered(n);
        return;
      }
      const held = Number(r!.headers.get('upload-offset'));
      if (outcome === 'ack') {
        // Acknowledged: exactly this PATCH landed, none of the unanswered ones at its offset did.
        if (held !== at + n) this.#violation(`tus PATCH of ${n} at ${at} acknowledged offset ${held}`, r);
        u.tus.acknowledged(held);
      } else if (outcome === 'refused') {
        // Only an earlier unanswered PATCH may have moved the offset, and only by all of it.
        const expected = u.tus.describe();
        if (!u.tus.told(held)) this.#violation(`tus offset ${held}, expected ${expected}`, r);
      }
    } finally {
      u.busy = false;
    }
  }

  async #totpSignIn(): Promise<void> {
    const now = stepAt(Date.now());
    // The next step the server can still accept: above every step sent, within one of now.
    const account = this.#pick(
      this.#accounts.filter((a) => a.totp !== null && !a.busy && Math.max(a.sentStep + 1, now) <= now + 1),
    );
    if (!account) return;
    account.busy = true;
    try {
      const login = await this.#call('POST', '/v1/auth/login', {
        body: { address: account.address, password: PASSWORD },
      });
      if (this.#classify('totp-login', login, 202) !== 'ack') return;
      const step = Math.max(account.sentStep + 1, stepAt(Date.now()));
      account.sentStep = step;
      const r = await this.#call('POST', '/v1/auth/login/verify-totp', {
        body: { challenge: login!.body.challenge, code: codeForStep(account.totp!, step) },
      });
      if (this.#classify('totp', r, 200) === 'ack') {
        account.ackedStep = Math.max(account.ackedStep, step);
        this.#remember(account, r!.body as Pair);
      }
    } finally {
      account.busy = false;
    }
  }

  // ----- the checks --------------------------------------------------------------------------

  /**
   * Checks every acknowledged write against the server (normally a freshly restarted one), and
   * returns what is wrong. Reservations are bounded both ways: every acknowledged one is there,
   * and the account's reserved bytes never exceed acknowledged plus unanswered ones.
   */
  async verify(
    options: { settledBy?: MixedWorkload } = {},
  ): Promise<{ problems: string[]; checks: Record<string, number> }> {
    // A session this snapshot saw open that the live load revoked since may be either.
    const settled = new Map<string, SessionRec['state']>();
    for (const a of options.settledBy ? options.settledBy.#accounts : [])
      for (const s of [a.home, ...a.sessions]) settled.set(s.id, s.state);
    const atMost = options.settledBy === undefined;
    const problems: string[] = [];
    const checks: Record<string, number> = {
      sessions: 0,
      revocations: 0,
      uploads: 0,
      tusOffsets: 0,
      quotas: 0,
      totpReplays: 0,
      registrations: 0,
    };
    const expect = (what: string, r: Reply | null, status: number, code?: string) => {
      if (r === null || r.status !== status || (code !== undefined && r.body?.code !== code)) {
        problems.push(
          `${what}: expected ${status}${code ? ` ${code}` : ''}, got ${r === null ? 'no answer' : `${r.status} ${JSON.stringify(r.body)}`}`,
        );
      }
    };
    for (const a of this.#accounts) {
      for (const s of [a.home, ...a.sessions]) {
        // Revoked after the snapshot, or forgotten by the live model (its cap): either state is fine.
        if (s.state === 'open' && options.settledBy !== undefined && settled.get(s.id) !== 'open') continue;
        if (s.state === 'open') {
          checks.sessions!++;
          const r = await this.#call('POST', '/v1/auth/refresh', { body: { session_token: s.token } });
          expect(`open session ${s.id} refreshes`, r, 200);
          if (r?.status === 200) {
            s.access = r.body.access_token;
            s.accessAt = Date.now();
          }
        } else if (s.state === 'revoked') {
          checks.revocations!++;
          expect(
            `revoked session ${s.id} refresh`,
            await this.#call('POST', '/v1/auth/refresh', { body: { session_token: s.token } }),
            401,
            'error.auth.session_invalid',
          );
          expect(
            `revoked session ${s.id} access token`,
            await this.#call('GET', '/v1/auth/profile', { token: s.access }),
            401,
            'error.auth.session_invalid',
          );
        }
      }
      for (const u of a.uploads) {
        checks.uploads!++;
        expect(
          `acknowledged upload ${u.id}`,
          await this.#call('GET', `/upload/${u.id}`, { token: a.home.access }),
          200,
        );
        if (u.tus.untouched) continue;
        // The durable offset is what a 204 acknowledged, or that plus a whole unanswered PATCH: never part of one.
        checks.tusOffsets!++;
        const r = await this.#call('GET', `/upload-tus/${u.id}`, {
          token: a.home.access,
          headers: { 'tus-resumable': '1.0.0' },
        });
        const held = r?.body?.upload_offset as number | undefined;
        // Checked against a later load (a backup drill), only the lower bound: later PATCHes may be in the copy.
        const fine =
          held !== undefined && (atMost ? u.tus.possible().includes(held) : held >= u.tus.offset && held <= u.tus.size);
        if (r?.status !== 200 || !fine)
          problems.push(
            `upload ${u.id} holds offset ${held}, expected ${atMost ? u.tus.describe() : `${u.tus.offset} to ${u.tus.size}`} (${r?.status})`,
          );
      }
      checks.quotas!++;
      const q = await this.#call('GET', '/quota', { token: a.home.access });
      const acked = a.ackedBytes;
      const reserved = q?.body?.reserved as number | undefined;
      // Checked against a later load (a backup drill), only the lower bound: later reservations may be in the copy.
      if (
        q?.status !== 200 ||
        reserved === undefined ||
        reserved < acked ||
        (atMost && reserved > acked + a.unknownBytes)
      ) {
        problems.push(
          `account ${a.accountId} reserved ${reserved}, expected ${acked}..${acked + a.unknownBytes} (${q?.status})`,
        );
      }
      if (a.totp !== null && a.ackedStep > a.checkedStep && a.ackedStep >= stepAt(Date.now()) - 1) {
        // The accepted code, replayed on a fresh challenge, must be refused: its step stayed used.
        checks.totpReplays!++;
        a.checkedStep = a.ackedStep;
        const login = await this.#call('POST', '/v1/auth/login', { body: { address: a.address, password: PASSWORD } });
        expect(`TOTP account ${a.accountId} sign-in`, login, 202);
        if (login?.status === 202) {
          const r = await this.#call('POST', '/v1/auth/login/verify-totp', {
            body: { challenge: login.body.challenge, code: codeForStep(a.totp, a.ackedStep) },
          });
          expect(`replayed TOTP step ${a.ackedStep} of ${a.accountId}`, r, 401, 'error.auth.invalid_code');
        }
      }
    }
    for (const address of this.#registered.splice(0)) {
      checks.registrations!++;
      expect(
        `registered ${address} signs in`,
        await this.#call('POST', '/v1/auth/login', { body: { address, password: PASSWORD } }),
        200,
      );
    }
    return { problems, checks };
  }
}
