/**
 * Loaded into the server process by `bench/soak.ts` (`node --import`), never by the server itself:
 * answers "memory" over the IPC channel with the process's memory after a full collection (the
 * process runs with --expose-gc), so start and end figures compare live data, not garbage.
 */
process.on('message', (message) => {
  if (message !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed, heapTotal } = process.memoryUsage();
  process.send?.({ rss, heapUsed, heapTotal });
});
