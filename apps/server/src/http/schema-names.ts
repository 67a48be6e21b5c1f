import type * as v from 'valibot';

/**
 * The names of wire shapes in the API reference. A schema given a name here becomes one entry of the
 * OpenAPI document's `components.schemas`, and every body that holds it refers to it by `$ref`, so a
 * generated client has one named type for it (`Quota`, `SyncPage`) instead of a shape per operation.
 * The name rides on the schema object itself, so a schema nested in another (an asset in a sync page)
 * is named wherever it appears.
 */
const names = new WeakMap<object, string>();

/** Names `schema` in the reference; returns it unchanged. */
export function named<S extends v.GenericSchema>(name: string, schema: S): S {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new Error(`A schema name is PascalCase: ${name}`);
  const earlier = names.get(schema);
  if (earlier !== undefined && earlier !== name) throw new Error(`One schema named twice: ${earlier} and ${name}`);
  names.set(schema, name);
  return schema;
}

/** The name given to `schema`, if any. */
export function nameOf(schema: unknown): string | undefined {
  return typeof schema === 'object' && schema !== null ? names.get(schema) : undefined;
}
