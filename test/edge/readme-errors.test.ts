/**
 * The error table (docs/api.md) against the code, both ways: every documented code is one the code can
 * answer, and every code the code can answer is documented with the status it is answered with.
 *
 * "What the code can answer" is collected from the source: every `new ApiError(<status>, …)`,
 * `badRequest(…)` (400) and `notFound(…)` (404) in src/ with the codes its `code` can take, and
 * every `new PluginError(<kind>, …, { code })` of a plugin that serves chat or embeddings (their
 * errors are mapped to answers by src/http/plugin-errors.ts: invalid_request → 400, failed → 502,
 * overloaded → 503; a video plugin's errors end in a job's `error.code`, not in an answer).
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Glob } from "bun";

const ROOT = new URL("../../", import.meta.url).pathname;
const page = readFileSync(ROOT + "docs/api.md", "utf8");
const table = page.slice(page.indexOf("<!-- error-table"), page.indexOf("\n\n", page.indexOf("<!-- error-table")));
const rows = [...table.matchAll(/^\| (\d{3}) \| ([^|]+) \|/gm)].map((m) => ({ status: Number(m[1]), codes: [...m[2]!.matchAll(/`([a-z_]+)`/g)].map((c) => c[1]!) }));
const filesUnder = (pattern: string) => [...new Glob(pattern).scanSync(ROOT)].filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".d.ts"));
const srcFiles = filesUnder("src/**/*.ts");
const sources = [...srcFiles, ...filesUnder("plugins/**/*.ts"), ...filesUnder("packages/plugin-sdk/src/**/*.ts")].map((f) => readFileSync(ROOT + f, "utf8")).join("\n");

/** Index just past the string, regex-free scan: handles "…", '…' and `…${…}…` (nested). */
function skipString(text: string, i: number): number {
  const q = text[i]!;
  for (let j = i + 1; j < text.length; j++) {
    const c = text[j]!;
    if (c === "\\") j++;
    else if (q === "`" && c === "$" && text[j + 1] === "{") j = balanced(text, j + 1) - 1;
    else if (c === q) return j + 1;
  }
  return text.length;
}

/** `text[open]` is ( [ or {: the index just past its matching closer. */
function balanced(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'" || c === "`") i = skipString(text, i) - 1;
    else if (c === "/" && text[i + 1] === "/") i = text.indexOf("\n", i) - 1;
    else if ("([{".includes(c)) depth++;
    else if (")]}".includes(c) && --depth === 0) return i + 1;
  }
  return text.length;
}

/** The top-level arguments of each call `<callee>(…)` in `text`. */
function callArgs(text: string, callee: RegExp): string[][] {
  const out: string[][] = [];
  for (const m of text.matchAll(callee)) {
    const open = m.index! + m[0].length - 1;
    const inner = text.slice(open + 1, balanced(text, open) - 1);
    const args: string[] = [];
    let start = 0;
    for (let i = 0; i < inner.length; i++) {
      const c = inner[i]!;
      if (c === '"' || c === "'" || c === "`") i = skipString(inner, i) - 1;
      else if ("([{".includes(c)) i = balanced(inner, i) - 1;
      else if (c === ",") (args.push(inner.slice(start, i).trim()), (start = i + 1));
    }
    if (inner.slice(start).trim()) args.push(inner.slice(start).trim());
    out.push(args);
  }
  return out;
}

/** The error codes the `code` property of an options object can take: its string literals (`code: a ? "x" : "y"`, `err.code ?? "z"`). */
function codesOf(options: string | undefined): string[] {
  const m = options ? /\bcode:\s*/.exec(options) : null;
  if (!m) return [];
  let end = m.index + m[0].length;
  for (; end < options!.length && !",}".includes(options![end]!); end++) {
    const c = options![end]!;
    if (c === '"' || c === "'" || c === "`") end = skipString(options!, end) - 1;
    else if ("([{".includes(c)) end = balanced(options!, end) - 1;
  }
  // the values it can take, not what a condition compares with (`kind === "requests" ? "a" : "b"`)
  return [...options!.slice(m.index, end).replace(/[=!]==?\s*"[a-z_]+"/g, "").matchAll(/"([a-z_]+)"/g)].map((x) => x[1]!);
}
const literal = (arg: string | undefined) => (arg && /^"[a-z_]+"$/.test(arg) ? arg.slice(1, -1) : null);

/** Every (status, code) the code can answer. */
function answeredCodes(): Array<{ status: number; code: string; where: string }> {
  const out: Array<{ status: number; code: string; where: string }> = [];
  for (const f of srcFiles) {
    const text = readFileSync(ROOT + f, "utf8");
    for (const args of callArgs(text, /\bnew ApiError\(/g)) {
      const status = Number(args[0]);
      for (const code of codesOf(args[3])) if (Number.isInteger(status)) out.push({ status, code, where: f });
    }
    for (const args of callArgs(text, /(?<![\w.])badRequest\(/g)) {
      if (f === "src/errors.ts" && args[0]?.startsWith("message:")) continue; // its definition
      const code = args.length < 3 ? "invalid_request" : literal(args[2]);
      if (code) out.push({ status: 400, code, where: f });
    }
    for (const args of callArgs(text, /(?<![\w.])notFound\(/g)) {
      if (f === "src/errors.ts" && args[0]?.startsWith("message:")) continue;
      const code = args.length < 2 ? "not_found" : literal(args[1]);
      if (code) out.push({ status: 404, code, where: f });
    }
  }
  const STATUS_BY_KIND: Record<string, number> = { '"invalid_request"': 400, '"failed"': 502, '"overloaded"': 503 };
  const plugins = new Set(filesUnder("plugins/*/*.ts").map((f) => f.split("/")[1]!));
  for (const p of plugins) {
    const files = filesUnder(`plugins/${p}/**/*.ts`);
    const text = files.map((f) => readFileSync(ROOT + f, "utf8")).join("\n");
    if (!/\b(ChatCapability|EmbeddingsCapability)\b|\b(chat|embeddings):/.test(text)) continue; // video only: errors end in jobs
    for (const args of callArgs(text, /\bnew PluginError\(/g)) {
      const status = STATUS_BY_KIND[args[0] ?? ""];
      if (status) for (const code of codesOf(args[2])) out.push({ status, code, where: `plugins/${p}` });
    }
  }
  return out;
}

test("docs/api.md documents an error table", () => {
  expect(rows.length).toBeGreaterThan(15);
});

test("every documented code is answered by the code", () => {
  for (const { codes } of rows) for (const code of codes) expect({ code, inSource: sources.includes(`"${code}"`) }).toEqual({ code, inSource: true });
});

test("every code the code can answer is documented, with the status it is answered with", () => {
  const answered = answeredCodes();
  // the collector finds what it must (a regression in it would make the next check vacuous)
  const found = new Set(answered.map((a) => `${a.status} ${a.code}`));
  for (const known of ["400 invalid_request", "400 invalid_json", "400 invalid_image", "400 too_many_inputs", "400 key_revoked", "400 context_length_exceeded", "401 invalid_api_key", "402 insufficient_quota", "404 account_not_found", "404 video_not_found", "429 rate_limit_exceeded", "429 tokens_rate_limit_exceeded", "503 model_loading", "503 model_overloaded"])
    expect({ known, found: found.has(known) }).toEqual({ known, found: true });
  expect(found.size).toBeGreaterThan(50);
  const documented = new Set(rows.flatMap((r) => r.codes.map((c) => `${r.status} ${c}`)));
  const missing = answered.filter((a) => !documented.has(`${a.status} ${a.code}`)).map((a) => `${a.status} ${a.code} (${a.where})`);
  expect([...new Set(missing)]).toEqual([]);
});

test("every code the shared HTTP layer and the plugin boundary answer is documented", () => {
  const documented = new Set(rows.flatMap((r) => r.codes));
  const shared = ["src/errors.ts", "src/http/error-handler.ts", "src/http/json-body.ts", "src/http/input-guard.ts", "src/http/validation-message.ts", "src/http/plugin-errors.ts", "src/plugin-host/plugin-faults.ts", "packages/plugin-sdk/src/failure.ts"].map((f) => readFileSync(ROOT + f, "utf8")).join("\n");
  const produced = new Set([...shared.matchAll(/code: "([a-z_]+)"|badRequest\([^\n]*, "([a-z_]+)"\)/g)].map((m) => m[1] ?? m[2]!));
  expect(produced.size).toBeGreaterThan(5);
  for (const code of produced) expect({ code, documented: documented.has(code) }).toEqual({ code, documented: true });
});
