/**
 * The generated OpenAPI document, made to say what reelay accepts:
 * - Elysia's integer/number schemas carry a string variant for query-string coercion
 *   (`anyOf: [{type: "string", format: "integer"}, {type: "integer"}]`); a docs UI then shows a JSON
 *   field such as embeddings' `dimensions` as "Any of string". Bodies are JSON: keep the number.
 * - Request bodies are documented as JSON only (form encodings are refused, not accepted). The
 *   plugin leaves `content` empty for a route whose body parser is a function (reelay's one JSON
 *   body reader, json-body.ts, parses every body), so each route's body schema is put back here.
 * - Validator messages (`error`) are not schema keywords; they stay out of the document.
 * - The plugin writes every response as application/json (or text/plain) and replaces `detail`'s
 *   own `responses` and `parameters` with what it derives from the route's schemas. A route that
 *   answers something else (an MP4, an event stream) declares those responses, and the request
 *   headers it reads, in `detail` in OpenAPI form; they are put back here, per status.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A route as Elysia lists it (`getGlobalRoutes()`): the body schema is a TypeBox (JSON) schema. */
export interface RouteBody {
  method: string;
  path: string;
  hooks?: { body?: unknown; detail?: { responses?: unknown; parameters?: unknown } };
}

export function tidyOpenApi<T>(doc: T, routes: RouteBody[] = []): T {
  const out = structuredClone(doc) as Json;
  restoreJsonBodies(out, routes);
  restoreDeclaredResponses(out, routes);
  moveLongAnswerDescriptions(out);
  return tidy(out, false) as T;
}

/**
 * A docs UI shows a response's description in the example panel, above the example: a paragraph
 * there (a stream's events, ~500 characters) left a few lines of the example visible. Longer ones
 * go to the end of the operation's description, where there is room; the response keeps a line.
 */
export const MAX_RESPONSE_DESCRIPTION = 160;

function moveLongAnswerDescriptions(doc: Json): void {
  for (const ops of Object.values(isObject(doc.paths) ? doc.paths : {})) {
    for (const op of Object.values(isObject(ops) ? ops : {})) {
      if (!isObject(op) || !isObject(op.responses)) continue;
      for (const [status, res] of Object.entries(op.responses)) {
        if (!isObject(res) || typeof res.description !== "string" || res.description.length <= MAX_RESPONSE_DESCRIPTION) continue;
        op.description = `${typeof op.description === "string" ? op.description + "\n\n" : ""}**Answer (${status}).** ${res.description}`;
        res.description = "See the answer described above.";
      }
    }
  }
}

const operationOf = (doc: Json, r: RouteBody): Json | null => {
  const op = (isObject(doc.paths) ? (doc.paths[r.path.replace(/:(\w+)/g, "{$1}")] as Json | undefined) : undefined)?.[r.method.toLowerCase()];
  return isObject(op) ? op : null;
};

function restoreDeclaredResponses(doc: Json, routes: RouteBody[]): void {
  for (const r of routes) {
    const detail = r.hooks?.detail;
    const op = detail ? operationOf(doc, r) : null;
    if (!op || !detail) continue;
    if (isObject(detail.responses)) op.responses = { ...(isObject(op.responses) ? op.responses : {}), ...structuredClone(detail.responses) };
    if (Array.isArray(detail.parameters)) {
      const have = Array.isArray(op.parameters) ? (op.parameters as Json[]) : [];
      const key = (p: Json) => `${p.in}:${String(p.name).toLowerCase()}`;
      const derived = new Set(have.map(key));
      op.parameters = [...have, ...(structuredClone(detail.parameters) as Json[]).filter((p) => !derived.has(key(p)))];
    }
  }
}

function restoreJsonBodies(doc: Json, routes: RouteBody[]): void {
  for (const r of routes) {
    if (!isObject(r.hooks?.body)) continue;
    const op = operationOf(doc, r);
    const body = op && isObject(op.requestBody) ? op.requestBody : null;
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
