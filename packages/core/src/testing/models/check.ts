/**
 * The few assertions the shared model-based properties need, without a test runner: the properties
 * run from every adapter's test files, and core itself depends on no test framework.
 */

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return (
    ka.length === kb.length &&
    ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

function matches(actual: unknown, expected: unknown): boolean {
  if (typeof expected !== 'object' || expected === null || expected instanceof Uint8Array || Array.isArray(expected))
    return deepEqual(actual, expected);
  if (typeof actual !== 'object' || actual === null) return false;
  return Object.entries(expected).every(([k, v]) => matches((actual as Record<string, unknown>)[k], v));
}

const show = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)) ?? String(v);

export function expect(actual: unknown, what = 'value') {
  const fail = (how: string, expected: unknown): never => {
    throw new Error(`${what}: expected ${how} ${show(expected)}, got ${show(actual)}`);
  };
  return {
    toBe(expected: unknown): void {
      if (!Object.is(actual, expected)) fail('', expected);
    },
    toEqual(expected: unknown): void {
      if (!deepEqual(actual, expected)) fail('equal to', expected);
    },
    toMatchObject(expected: unknown): void {
      if (!matches(actual, expected)) fail('to match', expected);
    },
    toBeGreaterThanOrEqual(n: number): void {
      if (!(typeof actual === 'number' && actual >= n)) fail('>=', n);
    },
    toBeLessThanOrEqual(n: number): void {
      if (!(typeof actual === 'number' && actual <= n)) fail('<=', n);
    },
  };
}
