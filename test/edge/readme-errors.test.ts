/**
 * The README's error table against the code: every documented code is one the code can answer,
 * with the documented status where the code states it, and every code the shared HTTP layer
 * produces is documented.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Glob } from "bun";

const ROOT = new URL("../../", import.meta.url).pathname;
const readme = readFileSync(ROOT + "README.md", "utf8");
const table = readme.slice(readme.indexOf("<!-- error-table"), readme.indexOf("\n\n", readme.indexOf("<!-- error-table")));
const rows = [...table.matchAll(/^\| (\d{3}) \| ([^|]+) \|/gm)].map((m) => ({ status: Number(m[1]), codes: [...m[2]!.matchAll(/`([a-z_]+)`/g)].map((c) => c[1]!) }));
const sources = ["src/**/*.ts", "plugins/**/*.ts", "packages/plugin-sdk/src/**/*.ts"].flatMap((g) => [...new Glob(g).scanSync(ROOT)]).filter((f) => !f.endsWith(".test.ts")).map((f) => readFileSync(ROOT + f, "utf8")).join("\n");

test("the README documents an error table", () => {
  expect(rows.length).toBeGreaterThan(15);
});

test("every documented code is answered by the code, with its status where the code says it", () => {
  for (const { status, codes } of rows) {
    for (const code of codes) {
      expect({ code, inSource: sources.includes(`"${code}"`) }).toEqual({ code, inSource: true });
      // `new ApiError(<status>, …, { code: "<code>" })` on one line: the status must be the documented one
      for (const m of sources.matchAll(new RegExp(`new ApiError\\((\\d{3}),[^\\n]*code: "${code}"`, "g"))) expect({ code, status: Number(m[1]) }).toEqual({ code, status });
    }
  }
});

test("every code the shared HTTP layer answers is documented", () => {
  const documented = new Set(rows.flatMap((r) => r.codes));
  const shared = ["src/errors.ts", "src/http/error-handler.ts", "src/http/json-body.ts", "src/http/input-guard.ts", "src/http/validation-message.ts", "src/http/plugin-errors.ts", "src/plugin-host/plugin-faults.ts", "packages/plugin-sdk/src/failure.ts"].map((f) => readFileSync(ROOT + f, "utf8")).join("\n");
  const produced = new Set([...shared.matchAll(/code: "([a-z_]+)"|badRequest\([^\n]*, "([a-z_]+)"\)/g)].map((m) => m[1] ?? m[2]!));
  for (const code of produced) expect({ code, documented: documented.has(code) }).toEqual({ code, documented: true });
});
