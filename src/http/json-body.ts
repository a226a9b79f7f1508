/**
 * Reading and parsing request bodies, for every route, in one place: Elysia's own parser is
 * replaced (a global parse hook) so that whatever a client sends, the body
 * - is counted as its bytes arrive, whatever the transfer encoding, and refused with the 413
 *   envelope once past the limit, having held at most the limit in memory;
 * - is JSON, sent as JSON (`Content-Type: application/json`), and not empty — or the 400 says so;
 * - is valid UTF-8, nested at most MAX_JSON_DEPTH deep, and holds no NUL character (PostgreSQL
 *   text cannot store one; a NUL reaching a query was a 500) — or the 400 names the field.
 * Routes without a body schema never read the body. A route that also takes multipart/form-data
 * (OpenAI's SDK uploads files that way: POST /v1/videos) gets its fields as an object, files as
 * File values, with the same limit and NUL rule.
 */
import { Elysia } from "elysia";
import { badRequest, quoted, tooLarge } from "../errors.ts";
import { readBodyCapped } from "../plugin-sdk/index.ts";

/**
 * 64 levels: OpenAI tool and response-format JSON Schemas nest ~10 deep in practice. Unbounded
 * nesting stalled the server (20,000 `[` held the event loop 3.4 s in the validator) or crashed it.
 */
export const MAX_JSON_DEPTH = 64;

export interface BodyRules {
  maxBytes: number;
  /** does this route (method + route template) take a JSON body? */
  expectsBody(method: string, route: string): boolean;
  /** does it also take multipart/form-data? */
  takesForm?(method: string, route: string): boolean;
}

export const jsonBody = (rules: BodyRules) =>
  new Elysia({ name: "json-body" }).onParse({ as: "global" }, async ({ request, route }, contentType) => {
    const form = rules.takesForm?.(request.method, route) === true;
    if (!rules.expectsBody(request.method, route) && !form) return null;
    if (!request.body || request.headers.get("content-length") === "0") throw emptyBody();
    // Elysia hands over the type without its parameters; the form's boundary is one
    if (form && /^multipart\/form-data/i.test(contentType.trim())) return parseForm(await readBody(request, rules.maxBytes), request.headers.get("content-type") ?? contentType);
    if (!isJsonType(contentType)) {
      throw badRequest(
        `Send the request body as JSON with the header 'Content-Type: application/json' (this request's Content-Type is ${contentType ? `'${printable(contentType)}'` : "missing"}).`,
        null, "invalid_content_type");
    }
    const bytes = await readBody(request, rules.maxBytes);
    if (bytes.byteLength === 0) throw emptyBody();
    return parseJsonBody(bytes);
  });

/** multipart/form-data → { field: string | File } (a repeated field: its last value) */
async function parseForm(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  let data: Awaited<ReturnType<Response["formData"]>>;
  try {
    data = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw badRequest("We could not parse the multipart/form-data body of your request.", null, "invalid_form");
  }
  const fields: Record<string, unknown> = {};
  for (const [name, value] of data.entries() as Iterable<[string, string | Blob]>) {
    if (name.includes("\0") || (typeof value === "string" && value.includes("\0"))) throw badRequest(`'${printable(name)}' contains a NUL character (\\u0000), which is not allowed.`, printable(name), "invalid_value");
    fields[name] = value;
  }
  return fields;
}

const emptyBody = () => badRequest("The request body is empty: send a JSON object with the header 'Content-Type: application/json'.", null, "empty_body");

function isJsonType(contentType: string): boolean {
  const type = contentType.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json");
}

/**
 * A body that declares its Content-Length (within the limit: a larger one was refused in
 * onRequest) is read in one arrayBuffer(): it cannot outgrow its declared length, and reading it
 * through a JS stream reader cost ~9 µs more CPU per request (Bun materialises it as a
 * ReadableStream). Chunked uploads, whose size is unknown, are counted as they arrive.
 */
async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length"));
  if (declared > 0 && declared <= maxBytes) return new Uint8Array(await request.arrayBuffer());
  return readBodyCapped(request, maxBytes, () => tooLarge(`Request body exceeds the limit of ${maxBytes} bytes.`));
}


const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Bytes → JSON value, or the 400 that says what is wrong with them. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw badRequest("The request body is not valid UTF-8 text; JSON must be encoded as UTF-8.", null, "invalid_json");
  }
  if (tooDeep(text)) throw badRequest(`The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep.`, null, "invalid_json");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const detail = (e as Error).message.replace(/^JSON Parse error: /, "").slice(0, 120);
    throw badRequest(`We could not parse the JSON body of your request (${detail}). Send valid JSON with 'Content-Type: application/json'.`, null, "invalid_json");
  }
  // JSON can only carry a NUL as the escape \u0000: no escape, no NUL, no walk.
  if (text.includes("\\u0000")) {
    const at = nulPath(value);
    if (at !== null) throw badRequest(`${at ? `'${printable(at)}'` : "The body"} contains a NUL character (\\u0000), which is not allowed.`, at ? printable(at) : null, "invalid_value");
  }
  return value;
}

/**
 * Whether brackets nest deeper than MAX_JSON_DEPTH, counted outside strings, before JSON.parse
 * (which itself takes ~1 s for 2,000,000 levels). Strings are skipped with indexOf.
 */
function tooDeep(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // find the closing quote: one not preceded by an odd number of backslashes
      for (;;) {
        const j = text.indexOf('"', i + 1);
        if (j < 0) return false; // unterminated: JSON.parse reports it
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        i = j;
        if ((j - 1 - k) % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Path of the first string (value or key) holding a NUL, e.g. "messages[0].content"; "" for the root; null if none. */
export function nulPath(root: unknown): string | null {
  const stack: Array<{ v: unknown; path: string }> = [{ v: root, path: "" }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (typeof v === "string") {
      if (v.includes("\0")) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}[${i}]` });
    } else if (v && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        const at = path ? `${path}.${k}` : k;
        if (k.includes("\0")) return at;
        stack.push({ v: child, path: at });
      }
    }
  }
  return null;
}

/** A client-supplied string made safe to quote in a message: bounded, control characters escaped. */
export const printable = quoted;
