import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// Test support: checks real answers against the served OpenAPI document with ajv, the way an
// outside client generator would read it. Imported by tests only.

export type Json = Record<string, any>;

export interface Operation {
  readonly method: string;
  /** The templated path, `/upload/{id}`. */
  readonly path: string;
  readonly op: Json;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** The raw body bytes. */
  readonly bytes: Uint8Array;
}

export function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths))
    for (const [method, op] of Object.entries<Json>(item)) out.push({ method: method.toUpperCase(), path, op });
  return out;
}

/** Follows a local `$ref` (`#/components/...`) once, or returns the object itself. */
export function deref(doc: Json, o: Json): Json {
  if (typeof o?.$ref !== 'string') return o;
  return o.$ref
    .slice(2)
    .split('/')
    .reduce((at: Json, key: string) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

/**
 * The schema with every local `$ref` replaced by what it names, for readers that take one schema
 * whole (the request generators of the property test). The document's schemas hold no cycles.
 */
export function inlined(doc: Json, schema: unknown): any {
  if (Array.isArray(schema)) return schema.map((x) => inlined(doc, x));
  if (typeof schema !== 'object' || schema === null) return schema;
  const { $ref, ...rest } = schema as Json;
  const named = typeof $ref === 'string' ? inlined(doc, deref(doc, { $ref })) : {};
  const own = Object.fromEntries(
    Object.entries(rest).map(([k, v]) => [k, k === 'const' || k === 'enum' ? v : inlined(doc, v)]),
  );
  return { ...named, ...own };
}

/** Checks answers against one document. Schemas are compiled once each. */
export class DocChecker {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();
  /** The document's components, closed as the schemas that refer to them are. */
  readonly #components: Json;

  constructor(readonly doc: Json) {
    this.#components = closed(doc.components);
    this.#ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.#ajv);
  }

  /**
   * Validates a value against a schema of the document (its `#/components/...` references resolve).
   * Objects are checked closed: a member the schema does not name is an error unless the schema
   * says otherwise, so an answer cannot carry fields the document forgot.
   */
  validate(schema: Json, value: unknown): string | null {
    const key = JSON.stringify(schema);
    let fn = this.#compiled.get(key);
    if (!fn) {
      fn = this.#ajv.compile({ ...closed(schema), components: this.#components });
      this.#compiled.set(key, fn);
    }
    return fn(value) ? null : this.#ajv.errorsText(fn.errors);
  }

  /**
   * Every way the answer departs from the document: an undocumented status, a content type the
   * status does not list, a body that does not match its schema, a missing protocol header.
   * Returns an empty list when the answer is what the document promises.
   */
  problems(o: Operation, answer: Answer): string[] {
    const found: string[] = [];
    if (answer.status >= 500) found.push(`server error ${answer.status}`);
    // An exact status, else its range (`4XX`: refusals passed on from another server).
    const response = o.op.responses[String(answer.status)] ?? o.op.responses[`${String(answer.status).slice(0, 1)}XX`];
    if (!response) return [...found, `undocumented status ${answer.status}`];
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
      if (deref(this.doc, header).required && !answer.headers.has(name)) found.push(`missing header ${name}`);
    }
    const header = answer.headers.get('content-type');
    const type = header === null ? null : header.split(';')[0]!.trim().toLowerCase();
    if (!response.content) {
      if (answer.bytes.byteLength > 0)
        found.push(`${answer.status} documents no body, got ${answer.bytes.byteLength} bytes of ${type}`);
      return found;
    }
    const media = type === null ? undefined : response.content[type];
    if (!media || type === null)
      return [...found, `${answer.status} answered ${type}, documented ${Object.keys(response.content).join(', ')}`];
    if (type === 'application/json' || type.endsWith('+json')) {
      let value: unknown;
      try {
        value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(answer.bytes));
      } catch {
        return [...found, `${answer.status} ${type} body is not JSON`];
      }
      const error = this.validate(media.schema ?? {}, value);
      if (error)
        found.push(
          `${answer.status} body does not match its schema: ${error}; body ${JSON.stringify(value).slice(0, 300)}`,
        );
    } else if (answer.bytes.byteLength === 0) {
      found.push(`${answer.status} ${type} body is empty`);
    }
    return found;
  }
}

/** The schema with `unevaluatedProperties: false` on every object that leaves extra members open. */
function closed(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'const' || k === 'enum' ? v : closed(v);
  if (out.properties && !('additionalProperties' in out) && !('unevaluatedProperties' in out))
    out.unevaluatedProperties = false;
  return out;
}

export async function answerOf(res: Response): Promise<Answer> {
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}
