/**
 * Wraps a port so a test can make it fail like an unreachable database: while `broken` is set,
 * every method call rejects. Used to prove fail-closed paths against real adapters.
 */
export function breakable<T extends object>(target: T): { port: T; break(): void; mend(): void } {
  let broken = false;
  const port = new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (broken) return Promise.reject(new Error('store unreachable (test fault)'));
        return (value as (...a: unknown[]) => unknown).apply(obj, args);
      };
    },
  });
  return {
    port,
    break: () => {
      broken = true;
    },
    mend: () => {
      broken = false;
    },
  };
}
