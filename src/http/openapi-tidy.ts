/**
 * The generated OpenAPI document, made to say what reelay accepts:
 * - Elysia's integer/number schemas carry a string variant for query-string coercion
 *   (`anyOf: [{type: "string", format: "integer"}, {type: "integer"}]`); a docs UI then shows a JSON
 *   field such as embeddings' `dimensions` as "Any of string". Bodies are JSON: keep the number.
 * - Request bodies are documented as JSON only (form encodings are refused, not accepted).
 * - Validator messages (`error`) are not schema keywords; they stay out of the document.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export function tidyOpenApi<T>(doc: T): T {
  return tidy(structuredClone(doc), false) as T;
}

function tidy(node: unknown, underProperties: boolean): unknown {
  if (Array.isArray(node)) return node.map((n) => tidy(n, false));
  if (!isObject(node)) return node;
  if (!underProperties) {
    const numeric = coercedNumber(node);
    if (numeric) return tidy(numeric, false);
    if (typeof node.error === "string") delete node.error;
    const content = isObject(node.requestBody) && isObject(node.requestBody.content) ? node.requestBody.content : null;
    if (content?.["application/json"]) for (const type of Object.keys(content)) if (type !== "application/json") delete content[type];
  }
  // keys under `properties` / `patternProperties` are field names, not schema keywords
  for (const [k, v] of Object.entries(node)) node[k] = tidy(v, !underProperties && (k === "properties" || k === "patternProperties"));
  return node;
}

/** `{...outer, anyOf: [{string, format integer|numeric}, {integer|number, ...}]}` → the number schema */
function coercedNumber(node: Json): Json | null {
  const any = node.anyOf;
  if (!Array.isArray(any) || any.length !== 2) return null;
  const [a, b] = any as Json[];
  const isCoercion = (s: Json) => isObject(s) && s.type === "string" && (s.format === "integer" || s.format === "numeric");
  const isNumber = (s: Json) => isObject(s) && (s.type === "integer" || s.type === "number");
  const num = isCoercion(a!) && isNumber(b!) ? b! : isCoercion(b!) && isNumber(a!) ? a! : null;
  if (!num) return null;
  const { anyOf: _, ...outer } = node;
  return { ...outer, ...num };
}
