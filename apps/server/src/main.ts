import { serve } from '@hono/node-server';
import type { Logger } from '@strongroom/core';
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { createApp } from './app.js';
import { ConfigError, readConfig, type Config, type HttpTimeouts } from './config.js';
import { buildDeps, nodePlatform, openStores } from './deps.js';
import { HttpProblem, problemResponse } from './http/problem.js';
import { answerClientErrors } from './http/client-error.js';
import { keepEveryHeaderLine } from './http/request.js';
import {
  checkDataDir,
  checkObjectStore,
  checkPortFree,
  recordSettingReads,
  redactedUrl,
  unknownSettings,
} from './startup-checks.js';
import { BackupScheduler, checkBackupDir } from './backup/schedule.js';
import { StagingSweeper } from './staging-sweep.js';
import { DURABILITY_LOST_EXIT, followPrimary, metricsThroughPrimary, superviseWorkers } from './workers.js';
import { DeploymentGauges } from './http/deployment-metrics.js';
import { failureForLog } from './logs/failure.js';

/** How long 503s are answered after a failed fsync before the process exits (DURABILITY_LOST_EXIT). */
const DURABILITY_LOST_EXIT_DELAY_MS = 1_000;

/** Opens (creating or migrating) the configured store; a failure names the setting that points at it. */
async function openConfiguredStores(config: Config, logger: Logger): Promise<Awaited<ReturnType<typeof openStores>>> {
  try {
    // A pooled connection PostgreSQL ended (a restart, a terminated backend): the pool replaces it
    // at the next checkout; the line tells the operator it happened.
    return await openStores(config, {
      onConnectionError: (err) =>
        logger.warn('db.connection_lost', { code: (err as NodeJS.ErrnoException).code ?? 'unknown' }),
    });
  } catch (err) {
    const where =
      config.databaseUrl !== null
        ? `SVC_DATABASE_URL=${redactedUrl(config.databaseUrl)}`
        : `SVC_DATA_DIR=${config.dataDir}`;
    const cause = err as NodeJS.ErrnoException;
    throw new Error(
      `${where}: cannot open the database: ${cause?.code ? `${cause.code} ` : ''}${cause?.message ?? String(err)}`,
    );
  }
}

/** Reads configuration, opens (and migrates) the store, and serves. Any startup failure exits non-zero. */
async function main(): Promise<void> {
  // Every SVC_* name the server asks for during start-up is recorded, so a misspelt one is named below.
  const settings = recordSettingReads(process.env);
  process.env = settings.env;
  const config = readConfig();
  const host = process.env.HOST ?? '127.0.0.1';
  // A worker (SVC_WORKERS > 1): its primary ran every check and prepared the store already.
  const worker = cluster.isWorker ? cluster.worker!.id : null;
  const primary = worker === null ? followNobody() : followPrimary();
  let dataDirNarrowedFrom: number | null = null;
  if (worker === null) {
    const backupDirProblem = await checkBackupDir(config);
    if (backupDirProblem) throw new ConfigError(backupDirProblem);
    // Nothing is written before these pass: no key file, no database, no migration.
    await checkPortFree(host, config.port);
    dataDirNarrowedFrom = checkDataDir(config.dataDir);
    await checkObjectStore(config);
  }
  const platform = nodePlatform(worker === null ? undefined : { worker });
  const { logger } = platform;
  if (dataDirNarrowedFrom !== null)
    logger.warn('data_dir.narrowed', { from: `0${dataDirNarrowedFrom.toString(8)}`, to: '0700' });
  if (worker === null && config.workers > 1) {
    // Once, before any worker exists: the secret key file, migrations, the deployment check and the
    // first signing and attestation keys, exactly as a single server would make them. The workers
    // then open a store that needs none of it, so no two of them race to create anything.
    const prepared = await openConfiguredStores(config, logger);
    await buildDeps(config, prepared, platform);
    await prepared.close();
    superviseWorkers(config.workers, logger);
    return;
  }
  const stores = await openConfiguredStores(config, logger);
  const deps = await buildDeps(config, stores, platform);
  const app = createApp(deps);
  let draining = false;
  let durabilityLost = false;
  const server = serve(
    {
      // Not an async wrapper: each extra promise layer costs the authenticated GET measurably.
      // A request that reached a kept-alive connection after SIGTERM is turned away, and that
      // connection is closed behind the answer so the client reconnects elsewhere.
      fetch: (request, env) =>
        durabilityLost
          ? problemResponse(
              new HttpProblem(
                'error.store.unavailable',
                'A durable write failed; this process is stopping for a restart.',
              ),
              { connection: 'close', 'retry-after': '1' },
            )
          : draining
            ? problemResponse(
                new HttpProblem(
                  'error.server.shutting_down',
                  'The server is shutting down; retry on a new connection.',
                ),
                { connection: 'close', 'retry-after': '1' },
              )
            : app.fetch(request, env),
      port: config.port,
      hostname: host,
      serverOptions: serverOptions(config.http),
    },
    (info) => {
      logger.info('server.listening', {
        port: info.port,
        base_url: config.baseUrl,
        database: config.databaseUrl ? 'postgresql' : 'sqlite',
        registration: config.registration,
        pid: process.pid,
      });
      if (worker !== null && worker > 1) return;
      for (const { name, closest } of unknownSettings(Object.keys(process.env), settings.asked)) {
        logger.warn('config.unknown_setting', { name, ...(closest !== null ? { did_you_mean: closest } : {}) });
      }
    },
  ) as Server;
  answerClientErrors(server, () => deps.protocol.headers.protocol);
  keepEveryHeaderLine(server);
  // The port was free a moment ago; if another process took it since, say so in one line.
  server.once('error', (err: NodeJS.ErrnoException) => {
    process.stderr.write(
      `strongroom: configuration error: PORT=${config.port}: cannot listen on ${host}:${config.port}: ${err.code ?? err.message}\n`,
    );
    process.exit(1);
  });
  // One scheduler per deployment, not per worker: the first worker takes the backups.
  const backups =
    config.backup && (worker === null || worker === 1)
      ? new BackupScheduler({ schedule: config.backup, clock: platform.clock, logger, metrics: deps.metrics })
      : null;
  backups?.start();
  // Every process runs the timer; a lease in the database lets one sweep at a time.
  const staging = new StagingSweeper({
    uploads: deps.uploads,
    leases: stores.deployment,
    intervalMs: config.stagingSweepMs,
    clock: platform.clock,
    logger,
  });
  staging.start();
  // The deployment's totals are counted by one process too, so the workers' aggregated scrape shows each once.
  const totals =
    worker === null || worker === 1
      ? new DeploymentGauges({ metrics: deps.metrics, operator: deps.operator, clock: platform.clock, logger })
      : null;
  totals?.start();
  if (worker !== null) deps.metrics.answerFor(metricsThroughPrimary(deps.metrics.registries()));
  // Socket inactivity: a body that stops moving frees its connection (the request timeout bounds a slow trickle).
  server.setTimeout(config.http.idleMs, (socket) => socket.destroy());

  const stop = (signal: string) => {
    if (draining) {
      // A second signal: stop waiting for in-flight requests.
      server.closeAllConnections();
      return;
    }
    draining = true;
    backups?.stop();
    staging.stop();
    totals?.stop();
    const started = Date.now();
    logger.info('server.stopping', { signal, grace_ms: config.http.shutdownGraceMs });
    // Stop accepting; idle kept-alive connections close now, busy ones as soon as their answer is out.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const grace = new Promise<'cut'>((resolve) =>
      setTimeout(() => resolve('cut'), config.http.shutdownGraceMs).unref(),
    );
    void Promise.race([closed.then(() => 'drained' as const), grace])
      .then(async (how) => {
        clearInterval(sweep);
        if (how === 'cut') server.closeAllConnections();
        // Closing the store last: SQLite checkpoints its WAL into the database file and removes it.
        await stores.close();
        logger.info('server.stopped', { how, ms: Date.now() - started });
        process.exit(0);
      })
      .catch((err: unknown) => {
        process.stderr.write(`strongroom: shutdown failed: ${(err as Error)?.message ?? String(err)}\n`);
        process.exit(1);
      });
  };
  // A failed fsync (spec §17.7): the process cannot know what
  // reached the disk. From now on every request, /readyz included, is 503; then the process exits
  // non-zero without closing the database cleanly (no checkpoint of a WAL it cannot trust), so a
  // supervisor restarts it and SQLite recovers from its log. The pause lets probes see the 503.
  stores.durability?.onLost((error) => {
    durabilityLost = true;
    logger.error('store.durability_lost', { error: failureForLog(error) });
    setTimeout(() => process.exit(DURABILITY_LOST_EXIT), DURABILITY_LOST_EXIT_DELAY_MS);
  });
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // The primary's word: a drain it asks for never cuts a drain already under way (a terminal's
  // Ctrl-C reaches the workers directly as well); its second signal does.
  primary.ready((signal, cut) => {
    if (!draining) stop(signal);
    if (cut) stop(signal);
  });
}

/** A single server has no primary to follow. */
function followNobody(): ReturnType<typeof followPrimary> {
  return { ready: () => undefined };
}

/**
 * Slow clients are cut off by the Node server itself, before any handler (and so any database
 * connection) is involved: headers must arrive within `headersMs`, the whole request within
 * `requestMs`; both are checked every second. Idle kept-alive connections close after `keepAliveMs`.
 */
function serverOptions(t: HttpTimeouts) {
  return {
    headersTimeout: t.headersMs,
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.keepAliveMs,
    connectionsCheckingInterval: 1_000,
  };
}

main().catch((err: unknown) => {
  const message =
    err instanceof ConfigError
      ? `configuration error: ${err.message}`
      : `startup failed: ${(err as Error)?.message ?? String(err)}`;
  process.stderr.write(`strongroom: ${message}\n`);
  process.exit(1);
});
