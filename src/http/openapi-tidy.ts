/**
 * The generated OpenAPI document, made to say what reelay accepts:
 * - Elysia's integer/number schemas carry a string variant for query-string coercion
 *   (`anyOf: [{type: "string", format: "integer"}, {type: "integer"}]`); a docs UI then shows a JSON
 *   field such as embeddings' `dimensions` as "Any of string". Bodies are JSON: keep the number.
 * - Request bodies are documented as JSON only (form encodings are refused, not accepted). The
 *   plugin leaves `content` empty for a route whose body parser is a function (reelay's one JSON
 *   body reader, json-body.ts, parses every body), so each route's body schema is put back here.
 * - Validator messages (`error`) are not schema keywords; they stay out of the document.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A route as Elysia lists it (`getGlobalRoutes()`): the body schema is a TypeBox (JSON) schema. */
export interface RouteBody {
  method: string;
  path: string;
  hooks?: { body?: unknown };
}

export function tidyOpenApi<T>(doc: T, routes: RouteBody[] = []): T {
  const out = structuredClone(doc) as Json;
  restoreJsonBodies(out, routes);
  return tidy(out, false) as T;
}

function restoreJsonBodies(doc: Json, routes: RouteBody[]): void {
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const r of routes) {
    if (!isObject(r.hooks?.body)) continue;
    const op = (paths[r.path.replace(/:(\w+)/g, "{$1}")] as Json | undefined)?.[r.method.toLowerCase()];
    const body = isObject(op) && isObject(op.requestBody) ? op.requestBody : null;
    if (!body || (isObject(body.content) && Object.keys(body.content).length)) continue;
    // TypeBox schemas are JSON Schema; the JSON round trip drops TypeBox's symbol keys
    body.content = { "application/json": { schema: JSON.parse(JSON.stringify(r.hooks!.body)) } };
  }
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
