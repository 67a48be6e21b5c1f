import { readConfig } from './config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps } from './deps.js';

/** Operator commands. Each takes the same environment as the server and talks to its database. */
type Command = (deps: AppDeps, args: string[]) => Promise<string>;

async function accountIdOf(deps: AppDeps, who: string | undefined): Promise<string> {
  if (!who) throw new Error('name an account by address or id');
  const byId = await deps.stores.accounts.findAccountById(who);
  const account = byId ?? (await deps.stores.accounts.findAccountByAddress(who.trim().toLowerCase()));
  if (!account) throw new Error(`no account ${who}`);
  return account.id;
}

export const COMMANDS: Record<string, { usage: string; run: Command }> = {
  'rotate-key': {
    usage: 'rotate-key                 retire the signing key and start signing with a new one',
    run: async (deps) => {
      const next = await deps.keyRing.rotate();
      return `signing key rotated; new kid ${next.kid}; the old key verifies for ${deps.config.keyGraceMs / 1000} s`;
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
};

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<{ code: number; out: string }> {
  const [name, ...args] = argv;
  const command = name ? COMMANDS[name] : undefined;
  if (!command) {
    return { code: name ? 2 : 0, out: `usage: npm run cli -- <command>\n\n${Object.values(COMMANDS).map((c) => `  ${c.usage}`).join('\n')}` };
  }
  const config = readConfig(env);
  const platform = { ...nodePlatform(), logger: { info() {}, warn() {}, error() {} } };
  const stores = await openStores(config);
  try {
    const deps = await buildDeps(config, stores, platform);
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
