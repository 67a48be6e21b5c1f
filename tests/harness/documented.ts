import type { Hono } from 'hono';

/**
 * Every answer a test server gives, kept per app, so that closing the server can check them against
 * the OpenAPI document it serves: a status an operation answered in any test, and the document does
 * not list on that operation, is a promise the reference forgot (a generated client has no type for
 * it, and a reader does not know to expect it). The property test (api.property.test.ts) checks the
 * answers to requests it generates; this checks the answers every HTTP test provokes on purpose.
 */
export interface Answered {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

const answered = new WeakMap<Hono, Answered[]>();

export function recordAnswer(app: Hono, answer: Answered): void {
  const list = answered.get(app) ?? [];
  answered.set(app, list);
  // Bounded: a load test sends many of the same; the statuses are what matter.
  if (list.length < 50_000) list.push(answer);
}

type Doc = { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };

/** The document's path template a concrete path falls under: the most literal one when several match. */
export function templateOf(doc: Doc, path: string): string | null {
  const segments = path.split('/');
  let best: { template: string; params: number } | null = null;
  for (const template of Object.keys(doc.paths)) {
    const parts = template.split('/');
    if (parts.length !== segments.length) continue;
    let params = 0;
    const fits = parts.every((part, i) => {
      if (/^\{[^}]+\}$/.test(part)) return segments[i] !== '' && ++params > 0;
      return part === segments[i];
    });
    if (fits && (best === null || params < best.params)) best = { template, params };
  }
  return best?.template ?? null;
}

/**
 * The answers `answers` holds that the document does not list on their operation, one line each.
 * Paths outside the document (the reference page, the document itself, unknown paths) and methods a
 * path does not list (405, a rule of the whole document) are the document's general rules, not an
 * operation's, and are left out.
 */
export function undocumentedIn(doc: Doc, answers: readonly Answered[]): string[] {
  const found = new Set<string>();
  for (const a of answers) {
    let pathname: string;
    try {
      pathname = decodeURI(a.path);
    } catch {
      pathname = a.path;
    }
    const template = templateOf(doc, pathname);
    if (template === null) continue;
    const op = doc.paths[template]![a.method.toLowerCase()];
    if (op === undefined) continue;
    const status = String(a.status);
    if (op.responses?.[status] === undefined && op.responses?.[`${status.slice(0, 1)}XX`] === undefined)
      found.add(`${a.method} ${template} answered ${a.status}, which its operation does not list`);
  }
  return [...found].sort();
}

/** The answers one app gave so far, oldest first. */
export function answersOf(app: Hono): readonly Answered[] {
  return answered.get(app) ?? [];
}

/** The undocumented answers of one app so far (its own served document is the reference). */
export async function undocumentedAnswers(app: Hono): Promise<string[]> {
  const answers = answered.get(app) ?? [];
  if (answers.length === 0) return [];
  const res = await app.request('/openapi.json');
  return undocumentedIn((await res.json()) as Doc, answers);
}
