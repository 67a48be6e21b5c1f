import { normalizeAddress } from '@strongroom/core';
import { readConfig } from './config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps } from './deps.js';

/** Operator commands. Each takes the same environment as the server and talks to its database. */
type Command = (deps: AppDeps, args: string[]) => Promise<string>;

async function accountIdOf(deps: AppDeps, who: string | undefined): Promise<string> {
  if (!who) throw new Error('name an account by address or id');
  // An id names any account, those without an address (OpenID, sponsored) included; only a UUID is
  // looked up as one (PostgreSQL refuses any other text for a uuid column).
  const looksLikeId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(who.trim());
  const byId = looksLikeId ? await deps.stores.accounts.findAccountById(who.trim().toLowerCase()) : null;
  // An address is looked up by the same normalized key sign-in uses (core's normalizeAddress).
  const address = looksLikeId ? null : normalizeAddress(who);
  const account = byId ?? (address?.ok ? await deps.stores.accounts.findAccountByAddress(address.value.key) : null);
  if (!account) throw new Error(`no account ${who}`);
  return account.id;
}

/** An RFC 3339 instant with a zone (Z or an offset); anything else is refused, never guessed. */
function parseInstant(text: string): number {
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text) || Number.isNaN(ms)) {
    throw new Error(`effective_at must be an RFC 3339 instant such as 2027-03-01T00:00:00Z, got "${text}"`);
  }
  return ms;
}

export const COMMANDS: Record<string, { usage: string; run: Command; adoptsBaseUrl?: boolean }> = {
  'adopt-base-url': {
    usage: 'adopt-base-url             record SVC_BASE_URL as the deployment\'s token issuer (after moving it; stop every process first)',
    adoptsBaseUrl: true,
    run: async (deps) => `the database now records ${deps.config.baseUrl} as the token issuer; start every process with this SVC_BASE_URL`,
  },
  'rotate-key': {
    usage: 'rotate-key                 retire the signing key and start signing with a new one',
    run: async (deps) => {
      const next = await deps.keyRing.rotate();
      return `signing key rotated; new kid ${next.kid}; the old key verifies for ${deps.config.keyGraceMs / 1000} s`;
    },
  },
  deprecate: {
    usage: 'deprecate <version> <effective_at>   announce that from effective_at (RFC 3339) the Min becomes version (at least SVC_DEPRECATION_NOTICE_S away)',
    run: async (deps, [version, when]) => {
      if (!version || !when) throw new Error('usage: deprecate <version YYYY-MM-DD> <effective_at RFC 3339>');
      const effectiveAt = parseInstant(when);
      const r = await deps.deprecations.announce(version, effectiveAt);
      if (!r.ok) throw new Error(`${r.code}: ${r.detail ?? 'refused'}`);
      return `announced: from ${new Date(r.value.effectiveAt).toISOString()} the minimum protocol version is ${r.value.minProtocolVersion}`;
    },
  },
  'rotate-attestation-key': {
    usage: 'rotate-attestation-key     retire the storage-attestation key and append a new one to the history',
    run: async (deps) => {
      const entry = await deps.attestation.rotate();
      return `attestation key rotated; new kid ${entry.kid}, history entry ${entry.seq} (${entry.hash})`;
    },
  },
  lock: {
    usage: 'lock <address|id>          lock an account (sign-in and password change refused)',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      await deps.stores.accounts.setLocked(id, deps.clock.now());
      return `locked ${id}`;
    },
  },
  unlock: {
    usage: 'unlock <address|id>        unlock an account',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      await deps.stores.accounts.setLocked(id, null);
      return `unlocked ${id}`;
    },
  },
  'quota-limits': {
    usage: 'quota-limits <address|id> <soft|-> <hard|-|default>   set an account\'s limits in bytes (- = unlimited, default = deployment)',
    run: async (deps, [who, soft, hard]) => {
      const id = await accountIdOf(deps, who);
      const bytes = (x: string | undefined): number | null => {
        if (x === '-') return null;
        if (!x || !/^\d+$/.test(x)) throw new Error('limits are whole numbers of bytes, or -');
        return Number(x);
      };
      const limits = soft === 'default' || hard === 'default' ? null : { soft: bytes(soft), hard: bytes(hard) };
      const r = await deps.quota.setLimits(id, limits);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return `limits of ${id}: soft ${r.value.softLimit ?? 'unlimited'}, hard ${r.value.hardLimit ?? 'unlimited'}; state ${r.value.state}`;
    },
  },
  suspend: {
    usage: 'suspend <address|id>       suspend an account\'s quota (uploads and metadata growth refused)',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      return `suspended ${id}; state ${(await deps.quota.suspend(id)).state}`;
    },
  },
  unsuspend: {
    usage: 'unsuspend <address|id>     lift a suspension',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      return `unsuspended ${id}; state ${(await deps.quota.unsuspend(id)).state}`;
    },
  },
  sponsor: {
    usage: 'sponsor <address|id> <sponsor address|id|->   charge an account\'s uploads to a sponsor (- ends it)',
    run: async (deps, [who, by]) => {
      const id = await accountIdOf(deps, who);
      const sponsor = by === '-' ? null : await accountIdOf(deps, by);
      const r = await deps.quota.setSponsor(id, sponsor);
      if (!r.ok) throw new Error(r.detail ?? r.code);
      return sponsor ? `${id} is sponsored by ${sponsor}` : `${id} pays for itself`;
    },
  },
  'gc-sweep': {
    usage: 'gc-sweep                   remove unreferenced blobs and credit their bytes to whoever was charged',
    run: async (deps) => {
      const r = await deps.quota.sweep();
      const credits = Object.entries(r.credited).map(([a, n]) => `  ${a}: -${n} bytes`);
      return [`swept ${r.swept.length} blobs, expired ${r.expiredUploads} upload sessions (federated fills included)`, ...credits].join('\n');
    },
  },
  'revoke-capability': {
    usage: 'revoke-capability <jti>    revoke one capability token this server minted (listed in revoked-jti for 24 h)',
    run: async (deps, [jti]) => {
      if (!jti) throw new Error('name the token by its jti');
      if (!(await deps.federation.revoke(jti))) throw new Error(`no unrevoked capability token ${jti}`);
      return `revoked capability token ${jti}`;
    },
  },
  'revoke-peer-capabilities': {
    usage: 'revoke-peer-capabilities <peer base URL>   revoke every live capability token minted for a peer',
    run: async (deps, [peer]) => {
      if (!peer) throw new Error('name the peer by its base URL');
      const n = await deps.federation.revokePeer(peer);
      return `revoked ${n} capability token${n === 1 ? '' : 's'} minted for ${peer.replace(/\/+$/, '')}`;
    },
  },
  ledger: {
    usage: 'ledger <address|id>        show an account\'s quota ledger and the blobs charged to it',
    run: async (deps, [who]) => {
      const id = await accountIdOf(deps, who);
      const r = await deps.quota.report(id);
      return JSON.stringify(
        {
          account_id: id,
          charged_to: r.payerId,
          charged: r.record.charged,
          used: r.status.used,
          reserved: r.status.reserved,
          soft_limit: r.status.softLimit,
          hard_limit: r.status.hardLimit,
          state: r.status.state,
          grace_expires_at: r.status.graceExpiresAt === null ? null : new Date(r.status.graceExpiresAt).toISOString(),
          alerts: r.status.alerts,
          sponsor_id: r.record.sponsorId,
          suspended_at: r.record.suspendedAt,
          blobs: r.blobs.map((b) => ({ content_hash: b.contentHash, size: b.size, peer: b.peer, stored_at: new Date(b.storedAt).toISOString() })),
        },
        null,
        2,
      );
    },
  },
};

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<{ code: number; out: string }> {
  const [name, ...args] = argv;
  const usage = `usage: npm run cli -- <command>\n\n${Object.values(COMMANDS).map((c) => `  ${c.usage}`).join('\n')}`;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') return { code: 0, out: usage };
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) return { code: 2, out: `unknown command: ${name}\n\n${usage}` };
  const config = readConfig(env);
  const platform = { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } };
  const stores = await openStores(config);
  try {
    const deps = await buildDeps(config, stores, platform, { adoptBaseUrl: command.adoptsBaseUrl ?? false });
    return { code: 0, out: await command.run(deps, args) };
  } catch (err) {
    return { code: 1, out: `error: ${(err as Error).message}` };
  } finally {
    await stores.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCli(process.argv.slice(2)).then(({ code, out }) => {
    process.stdout.write(out + '\n');
    process.exit(code);
  });
}
