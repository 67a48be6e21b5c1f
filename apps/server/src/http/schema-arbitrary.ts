import fc from 'fast-check';
import type { Json } from './doc-check.js';

// Test support: fast-check arbitraries read from the JSON Schemas of the OpenAPI document, for
// values the schema accepts and for values that break it in one place. Covers the keywords our
// document uses (type, const, enum, anyOf, oneOf, pattern, min/maxLength, minimum/maximum, properties,
// required, additionalProperties, maxProperties, items); anything else is "any JSON".

const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 });

const codePoints = (s: string) => [...s].length;

function stringArb(s: Json): fc.Arbitrary<string> {
  const min: number = s.minLength ?? 0;
  const max: number | undefined = s.maxLength;
  if (typeof s.pattern === 'string') {
    const re = new RegExp(s.pattern, 'u');
    return fc.stringMatching(re).filter((x) => codePoints(x) >= min && (max === undefined || codePoints(x) <= max));
  }
  // Every Unicode code point but lone surrogates (which JSON cannot carry as I-JSON).
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: Math.min(max ?? 40, min + 40) }) },
    // The edges: exactly the shortest and the longest allowed.
    { weight: 1, arbitrary: fc.constantFrom(...[min, max ?? min + 300].map((n) => 'é'.repeat(n))) },
  );
}

/** Values the schema accepts. */
export function valid(s: Json | undefined): fc.Arbitrary<unknown> {
  if (!s || Object.keys(s).length === 0) return anyJson;
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (Array.isArray(s.anyOf)) return fc.oneof(...s.anyOf.map((x: Json) => valid(x)));
  if (Array.isArray(s.oneOf)) return fc.oneof(...s.oneOf.map((x: Json) => valid(x)));
  switch (s.type) {
    case 'string':
      return stringArb(s);
    case 'integer':
      return fc.oneof(
        fc.integer({ min: Math.max(s.minimum ?? -1e6, -1e6), max: Math.min(s.maximum ?? 1e6, 1e6) }),
        fc.constantFrom(...[s.minimum, s.maximum].filter((x) => typeof x === 'number')),
      );
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum ?? -1e9, max: s.maximum ?? 1e9 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valid(s.items), { maxLength: 3 });
    case 'object': {
      if (s.maxProperties === 0) return fc.constant({});
      const props: Record<string, Json> = s.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = valid(v);
      return fc.record(model, { requiredKeys: (s.required ?? []) as string[] });
    }
    default:
      return anyJson;
  }
}

/** A value of another JSON type than the schema's. */
function wrongType(s: Json): fc.Arbitrary<unknown> {
  const all: [string, fc.Arbitrary<unknown>][] = [
    ['string', fc.string({ maxLength: 5 })],
    ['integer', fc.integer()],
    ['number', fc.constantFrom(1.5, -0.25, 1e300)],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.constant([1, 'x'])],
    ['object', fc.constant({ nested: true })],
  ];
  const own = new Set<string>([s.type, ...(s.anyOf ?? []).map((x: Json) => x.type)].filter(Boolean));
  if (own.has('number')) own.add('integer');
  const others = all.filter(([t]) => !own.has(t)).map(([, a]) => a);
  // A schema that takes anything has no wrong type: the member is left out instead.
  return others.length ? fc.oneof(...others) : fc.constant(undefined);
}

/** Values just outside the schema's size bounds, where it has any. */
function outOfBounds(s: Json): fc.Arbitrary<unknown>[] {
  const out: fc.Arbitrary<unknown>[] = [];
  if (typeof s.maxLength === 'number') out.push(fc.constant('é'.repeat(s.maxLength + 1)));
  if (typeof s.minLength === 'number' && s.minLength > 0) out.push(fc.constant('é'.repeat(s.minLength - 1)));
  if (typeof s.maximum === 'number') out.push(fc.constant(s.maximum + 1), fc.constant(s.maximum * 2));
  if (typeof s.minimum === 'number') out.push(fc.constant(s.minimum - 1));
  if (s.type === 'integer') out.push(fc.constant(1.5));
  if (typeof s.pattern === 'string')
    out.push(fc.string({ maxLength: 8 }).filter((x) => !new RegExp(s.pattern, 'u').test(x)));
  return out;
}

/**
 * A value that breaks an object schema in one place: a required member missing, an unknown member,
 * a member of the wrong type or just out of bounds, or not an object at all.
 */
export function mutated(s: Json): fc.Arbitrary<unknown> {
  if (s.type !== 'object') return fc.oneof(wrongType(s), ...outOfBounds(s));
  const base = valid(s) as fc.Arbitrary<Record<string, unknown>>;
  const props = Object.entries<Json>(s.properties ?? {});
  const required: string[] = s.required ?? [];
  const choices: fc.Arbitrary<unknown>[] = [
    base.map((o) => ({ ...o, zz_unknown_member: 1 })),
    fc.constantFrom<unknown>([], 'text', 42, null, true),
  ];
  if (required.length)
    choices.push(
      fc
        .tuple(base, fc.constantFrom(...required))
        .map(([o, k]) => Object.fromEntries(Object.entries(o).filter(([key]) => key !== k))),
    );
  for (const [k, ps] of props) {
    choices.push(fc.tuple(base, wrongType(ps)).map(([o, bad]) => ({ ...o, [k]: bad })));
    for (const edge of outOfBounds(ps)) choices.push(fc.tuple(base, edge).map(([o, bad]) => ({ ...o, [k]: bad })));
  }
  return fc.oneof(...choices);
}
