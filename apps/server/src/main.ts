import { serve } from '@hono/node-server';
import { createApp } from './app.js';
import { ConfigError, readConfig } from './config.js';
import { buildDeps, nodePlatform, openStores } from './deps.js';

/** Reads configuration, opens (and migrates) the store, and serves. Any startup failure exits non-zero. */
async function main(): Promise<void> {
  const config = readConfig();
  const platform = nodePlatform();
  const stores = await openStores(config);
  const deps = await buildDeps(config, stores, platform);
  const app = createApp(deps);
  const server = serve({ fetch: app.fetch, port: config.port, hostname: process.env.HOST ?? '127.0.0.1' }, (info) => {
    platform.logger.info('server.listening', { port: info.port, base_url: config.baseUrl, database: config.databaseUrl ? 'postgresql' : 'sqlite' });
  });
  const stop = () => {
    server.close(() => void stores.close().then(() => process.exit(0)));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? `configuration error: ${err.message}` : `startup failed: ${(err as Error)?.message ?? String(err)}`;
  process.stderr.write(`strongroom: ${message}\n`);
  process.exit(1);
});
