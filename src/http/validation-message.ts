/**
 * One mapping from a schema violation to the 400 a client reads, for every route: the message
 * names the field and says what is allowed in plain words, from the schema itself ("'amount' must
 * be an integer from 1 to 1000000000000000; got -5."), or the schema's own `error` text when it
 * has one. Never prints an unchecked value whole: values are described by kind, short ones quoted.
 */
import type { TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import { ApiError } from "../errors.ts";
import { printable } from "./json-body.ts";

export interface Violation {
  /** JSON pointer of the failing value ("/messages/0/role"; "" for the root) */
  path: string;
  schema: TSchema;
  value: unknown;
}

type Where = "body" | "query" | "params" | "headers";

/** The first violation of `value` against a compiled schema, as the 400 to answer. */
export function invalidInput(check: TypeCheck<TSchema>, value: unknown, where: Where = "body"): ApiError {
  const first = check.Errors(value).First();
  return violationError(first ? deepest({ path: first.path, schema: first.schema, value: first.value }) : { path: "", schema: check.Schema(), value }, where);
}

/**
 * TypeBox stops at a union (`scopes: ["foo"]` fails `null | array of …` as a whole). When exactly
 * one member has the value's JSON kind, the error inside that member names the real culprit
 * (`scopes[0]`). Runs only on the error path, on one (small) field value.
 */
function deepest(v: Violation, depth = 0): Violation {
  const members = (v.schema as { anyOf?: TSchema[] }).anyOf;
  if (!members || depth > 8) return v;
  const kind = kindOf(v.value);
  const same = members.filter((m) => m.type === kind || (kind === "integer" && m.type === "number") || (kind === "number" && m.type === "integer"));
  if (same.length !== 1) return v;
  const inner = Value.Errors(same[0]!, v.value).First();
  if (!inner) return v;
  return deepest({ path: v.path + inner.path, schema: inner.schema, value: inner.value }, depth + 1);
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

export function violationError(v: Violation, where: Where = "body"): ApiError {
  const param = paramOf(v.path);
  const custom = (v.schema as { error?: unknown }).error;
  if (typeof custom === "string") return invalid(custom, param);
  if (!param) {
    if (where === "body") return invalid(v.value === undefined || v.value === null ? "The request body is empty: send a JSON object with the header 'Content-Type: application/json'." : `The request body must be a JSON object; got ${describeValue(v.value)}.`, null);
    return invalid(`Invalid ${where}: expected ${describeSchema(v.schema)}.`, null);
  }
  const what = where === "query" ? "query parameter" : where === "params" ? "path parameter" : where === "headers" ? "header" : "field";
  if (v.value === undefined) return invalid(`Missing required ${what} '${param}': ${describeSchema(v.schema)}.`, param);
  return invalid(`Invalid ${what} '${param}': must be ${describeSchema(v.schema)}; got ${describeValue(v.value)}.`, param);
}

const invalid = (message: string, param: string | null) => new ApiError(400, "invalid_request_error", message, { param, code: "invalid_request" });

/** "/messages/0/role" → "messages[0].role" */
export function paramOf(pointer: string): string | null {
  const parts = pointer.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = "";
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out ? printable(out, 120) : null;
}

/** A schema in plain words: "an integer from 1 to 100", "one of 'chat', 'embeddings', 'video'". */
export function describeSchema(s: TSchema): string {
  const anyOf = (s as { anyOf?: TSchema[] }).anyOf;
  if (anyOf) {
    // Elysia's t.Integer is anyOf [integer, numeric string]: the same words twice
    const parts = [...new Set(anyOf.filter((x) => !(x.type === "string" && (x as { format?: string }).format === "integer" && anyOf.length > 1)).map(describeSchema))];
    const literals = anyOf.filter((x) => "const" in x);
    if (literals.length === anyOf.length) return `one of ${literals.map((x) => quote(x.const)).join(", ")}`;
    return parts.join(" or ");
  }
  if ("const" in s) return quote(s.const);
  if (Array.isArray(s.enum)) return `one of ${s.enum.map(quote).join(", ")}`;
  switch (s.type) {
    case "string": {
      const { minLength, maxLength } = s as { minLength?: number; maxLength?: number };
      const base = minLength && minLength > 0 ? "a non-empty string" : "a string";
      return maxLength !== undefined ? `${base} of at most ${maxLength} characters` : base;
    }
    case "integer":
      return `an integer${range(s)}`;
    case "number":
      return `${(s as { multipleOf?: number }).multipleOf === 1 ? "an integer" : "a number"}${range(s)}`;
    case "boolean":
      return "true or false";
    case "null":
      return "null";
    case "array": {
      const { items, minItems, maxItems } = s as { items?: TSchema; minItems?: number; maxItems?: number };
      const size = minItems && maxItems ? ` (${minItems} to ${maxItems} items)` : minItems && minItems > 1 ? ` (at least ${minItems})` : maxItems ? ` (at most ${maxItems})` : "";
      const each = items ? describeSchema(items) : null;
      const of = !each ? "" : each.startsWith("one of") ? ` whose items are each ${each}` : ` of ${plural(each)}`;
      return `${minItems === 1 && !maxItems ? "a non-empty array" : "an array"}${of}${size}`;
    }
    case "object":
      return "a JSON object";
  }
  return "a valid value";
}

function range(s: TSchema): string {
  const { minimum: min, maximum: max } = s as { minimum?: number; maximum?: number };
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return "";
}

/** "an integer from 0 to 9" → "integers from 0 to 9", "a string" → "strings", "one of …" stays */
function plural(desc: string): string {
  if (desc === "a JSON object") return "JSON objects";
  return desc.replace(/^(a non-empty|an|a) (\w+)/, (_m, article: string, noun: string) => `${article === "a non-empty" ? "non-empty " : ""}${noun}s`);
}

const quote = (v: unknown) => (typeof v === "string" ? `'${printable(v, 40)}'` : String(v));

/** A client value described without echoing it whole: its kind, and short scalars quoted. */
export function describeValue(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "string") return v.length <= 40 ? JSON.stringify(printable(v, 40)) : `a string of ${v.length} characters`;
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "a non-finite number";
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (typeof v === "object") return "an object";
  return typeof v;
}
