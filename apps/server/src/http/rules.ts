import * as v from 'valibot';
import type { ProblemCode } from './problem.js';

/**
 * A request rule that lives in core, carried into a valibot schema so that the body check and the
 * OpenAPI document both know it. `v.check` runs the core predicate; the two tables below remember,
 * per predicate, the problem code a failure answers with and the JSON Schema keywords that state the
 * rule for the document (read by openapi.ts through @valibot/to-json-schema's `overrideAction`).
 */
type Predicate = (input: string) => boolean;

const codes = new WeakMap<Predicate, ProblemCode>();
const keywords = new WeakMap<Predicate, Record<string, unknown>>();

export interface RuleSpec {
  /** The problem code a failure answers with (default `error.request.invalid`). */
  readonly code?: ProblemCode;
  /**
   * JSON Schema keywords stating the rule. They may be stricter than the predicate (a value they
   * accept is always accepted) but never looser.
   */
  readonly json: Record<string, unknown>;
}

export function rule(check: Predicate, message: string, spec: RuleSpec): v.CheckAction<string, string> {
  const predicate: Predicate = (input) => check(input);
  if (spec.code) codes.set(predicate, spec.code);
  keywords.set(predicate, spec.json);
  return v.check(predicate, message);
}

/**
 * The code a failed body check answers with: a rule's own code when every issue comes from rules
 * that agree on it, otherwise `error.request.invalid`.
 */
export function problemCodeOf(issues: readonly v.BaseIssue<unknown>[]): ProblemCode {
  let found: ProblemCode | undefined;
  for (const issue of issues) {
    const code = issue.type === 'check' ? codes.get(issue.requirement as Predicate) : undefined;
    if (code === undefined || (found !== undefined && found !== code)) return 'error.request.invalid';
    found = code;
  }
  return found ?? 'error.request.invalid';
}

/** The JSON Schema keywords of a rule's check action, or undefined for any other action. */
export function ruleKeywords(action: unknown): Record<string, unknown> | undefined {
  const a = action as { type?: string; requirement?: unknown };
  return a.type === 'check' ? keywords.get(a.requirement as Predicate) : undefined;
}

/** Counts Unicode code points, as JSON Schema's minLength and maxLength do. */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
