/**
 * The API docs: the OpenAPI document says what reelay accepts, docs/api.md's route table matches
 * it, and the Scalar UI renders at /docs and /docs/ in a real browser with no request leaving the
 * machine (every other origin is blocked, as on a host without internet).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchBrowser, see, watch } from "../../console/test/browser.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { MAX_RESPONSE_DESCRIPTION } from "./openapi-tidy.ts";

let s: TestServer;
let spec: any;
beforeAll(async () => {
  s = await startTestServer();
  spec = await (await fetch(`${s.url}/docs/json`)).json();
}, 60_000);
afterAll(() => s?.close());

const METHODS = ["get", "post", "put", "patch", "delete"];
const operations = () =>
  Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).filter(([m]) => METHODS.includes(m)).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, op })));

describe("OpenAPI document", () => {
  test("every operation has a short title; the details are in its description", () => {
    const long = operations().filter(({ op }) => typeof op.summary !== "string" || op.summary.length > 40 || /[.;:]$/.test(op.summary));
    expect(long.map(({ route, op }) => `${route}: ${op.summary}`)).toEqual([]);
    const chat = spec.paths["/v1/chat/completions"].post;
    expect(chat.summary).toBe("Create a chat completion");
    expect(chat.description).toContain("streamed (SSE) with `stream: true`");
  });

  test("numbers are numbers (no 'Any of string'), bodies are JSON only, no validator messages", () => {
    const body = (path: string) => spec.paths[path].post.requestBody.content;
    expect(Object.keys(body("/v1/embeddings"))).toEqual(["application/json"]);
    const dimensions = body("/v1/embeddings")["application/json"].schema.properties.dimensions;
    expect(dimensions).toMatchObject({ minimum: 1, description: expect.stringContaining("output size") });
    expect(["integer", "number"]).toContain(dimensions.type);
    expect(dimensions.anyOf).toBeUndefined();
    for (const path of ["/v1/chat/completions", "/v1/videos/generations", "/admin/accounts"]) {
      expect({ path, types: Object.keys(body(path)) }).toEqual({ path, types: ["application/json"] });
      expect(body(path)["application/json"].schema.properties.name ?? body(path)["application/json"].schema.properties.model).toBeDefined();
    }
    const text = JSON.stringify(spec);
    expect(text).not.toContain('"format":"integer"');
    expect(text).not.toContain('"format":"numeric"');
    expect(text).not.toContain('"error":"');
  });

  test("the chat example runs as written on a fresh install, with the model the README's SDK example uses", async () => {
    const example = spec.paths["/v1/chat/completions"].post.requestBody.content["application/json"].schema.examples[0];
    const { key } = await s.newClient();
    const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(example) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).choices[0].message.content.length).toBeGreaterThan(0);
    const readme = await Bun.file(new URL("../../README.md", import.meta.url)).text();
    expect(readme).toContain(`model: "${example.model}"`);
  });

  test("docs/api.md's route table lists every client route, and only routes that exist", async () => {
    const page = await Bun.file(new URL("../../docs/api.md", import.meta.url)).text();
    const section = page.slice(page.indexOf("\n## Routes\n"), page.indexOf("\n## ", page.indexOf("\n## Routes\n") + 5));
    const norm = (r: string) => r.split("?")[0]!.replace(/\{[^}]+\}/g, "{}").trim();
    // cells hold `GET /a`, `GET /a?limit=`, or several methods at once: `GET/PATCH/DELETE /a/{id}`
    const inReadme = new Set(
      section.split("\n").filter((l) => l.startsWith("| `")).flatMap((l) =>
        [...l.split("|")[1]!.matchAll(/`((?:GET|POST|PATCH|PUT|DELETE)(?:\/(?:GET|POST|PATCH|PUT|DELETE))*) ([^`]+)`/g)].flatMap((m) => m[1]!.split("/").map((method) => norm(`${method} ${m[2]}`))),
      ),
    );
    const client = operations().map((o) => norm(o.route)).filter((r) => !r.includes(" /admin/"));
    expect(client.filter((r) => !inReadme.has(r))).toEqual([]);
    expect([...inReadme].filter((r) => !client.includes(r))).toEqual([]);
  });
});

describe("every documented parameter", () => {
  /** a value the parameter's schema allows: its default or example, the first of its enum or pattern's alternatives, its minimum */
  function sample(p: any): string {
    const s = p.schema ?? {};
    if (p.in === "header") return ({ range: "bytes=0-1", "if-range": '"x"', "if-none-match": '"x"' } as Record<string, string>)[String(p.name).toLowerCase()] ?? "x";
    if (p.name === "from") return new Date(Date.now() - 3_600_000).toISOString();
    if (p.name === "to") return new Date().toISOString();
    if (s.default !== undefined) return String(s.default);
    if (s.examples?.length) return String(s.examples[0]);
    if (s.enum?.length) return String(s.enum[0]);
    const alternatives = /^\^\(([^)]+)\)\$$/.exec(s.pattern ?? "");
    if (alternatives) return alternatives[1]!.split("|")[0]!;
    if (s.type === "integer" || s.type === "number") return String(s.minimum ?? 1);
    if (s.type === "boolean") return "true";
    return "x_walk";
  }

  test("is accepted: each one alone on its route gets no 400 naming it, and no 5xx", async () => {
    const { key } = await s.newClient();
    const refused: string[] = [];
    let sent = 0;
    for (const { route, op } of operations()) {
      const [method, path] = route.split(" ") as [string, string];
      const params: any[] = op.parameters ?? [];
      const admin = (op.security ?? []).some((x: any) => "admin" in x) || path.startsWith("/admin") || path === "/metrics";
      const url = (extra: string) => s.url + path.replace(/\{(\w+)\}/g, (_, n) => encodeURIComponent(sample({ in: "path", name: n, schema: {} }))) + extra;
      for (const p of params.filter((x) => x.in !== "path")) {
        const headers: Record<string, string> = { authorization: `Bearer ${admin ? ADMIN_TOKEN : key}` };
        if (p.in === "header") headers[p.name] = sample(p);
        const query = p.in === "query" ? `?${encodeURIComponent(p.name)}=${encodeURIComponent(sample(p))}` : "";
        const body = ["POST", "PATCH", "PUT"].includes(method) ? "{}" : undefined;
        if (body) headers["content-type"] = "application/json";
        const res = await fetch(url(query), { method, headers, body });
        sent++;
        const err = res.status >= 400 ? ((await res.json().catch(() => null)) as any)?.error : (await res.arrayBuffer(), null);
        if (res.status >= 500 || (res.status === 400 && (err?.param === p.name || String(err?.message).includes(`'${p.name}'`)))) refused.push(`${route} ${p.in} ${p.name}=${sample(p)}: ${res.status} ${err?.message}`);
      }
      // the path parameters: a well-formed id of nothing is a 404, never a 400 about the parameter
      if (params.some((x) => x.in === "path") && method !== "HEAD") {
        const res = await fetch(url(""), { method, headers: { authorization: `Bearer ${admin ? ADMIN_TOKEN : key}`, "content-type": "application/json" }, body: ["POST", "PATCH", "PUT"].includes(method) ? "{}" : undefined });
        sent++;
        const err = res.status >= 400 ? ((await res.json().catch(() => null)) as any)?.error : (await res.arrayBuffer(), null);
        if (res.status >= 500 || (res.status === 400 && params.some((x) => x.in === "path" && err?.param === x.name))) refused.push(`${route} path: ${res.status} ${err?.message}`);
      }
    }
    expect(sent).toBeGreaterThan(60);
    expect(refused).toEqual([]);
  });

  test("GET /v1/responses/{id} documents no `stream`, and ?stream=true is a 400 that says replaying is not implemented", async () => {
    expect((spec.paths["/v1/responses/{id}"].get.parameters ?? []).map((p: any) => p.name)).toEqual(["id"]);
    const { key } = await s.newClient();
    const res = await fetch(`${s.url}/v1/responses/resp_x?stream=true`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ param: "stream", code: "unsupported_parameter" });
  });

  test("no response description crowds the example panel: a long one is part of the operation's description", () => {
    const long = operations().flatMap(({ route, op }) => Object.entries(op.responses ?? {}).filter(([, r]: [string, any]) => (r.description ?? "").length > MAX_RESPONSE_DESCRIPTION).map(([status]) => `${route} ${status}`));
    expect(long).toEqual([]);
    expect(spec.paths["/v1/responses"].post.description).toContain("**Answer (200).** With `stream: true`");
    expect(spec.paths["/v1/responses/{id}"].get.description).not.toContain("With `stream: true`");
  });
});

describe("usage records", () => {
  test("every field of a usage record is described, in /docs and in docs/api.md's table, and only those", async () => {
    const resolve = (x: any): any => (x?.$ref ? resolve(spec.components.schemas[x.$ref.split("/").pop()]) : x);
    const item = resolve(resolve(spec.paths["/v1/usage"].get.responses[200].content["application/json"].schema).properties.data.items);
    const fields = Object.keys(item.properties);
    const described = (p: any): boolean => typeof p.description === "string" || (p.anyOf ?? []).some(described);
    expect(fields.filter((f) => f !== "object" && !described(item.properties[f]))).toEqual([]);
    const page = await Bun.file(new URL("../../docs/api.md", import.meta.url)).text();
    const table = page.slice(page.indexOf("<!-- usage-fields"), page.indexOf("\n\n", page.indexOf("<!-- usage-fields")));
    expect([...table.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1])).toEqual(fields);
  });
});

describe("what is not JSON", () => {
  test("the MP4 download is video/mp4 (binary) with its range headers; HEAD has the headers only", () => {
    const op = spec.paths["/v1/videos/generations/{id}/content"].get;
    expect(Object.keys(op.responses[200].content)).toEqual(["video/mp4"]);
    expect(op.responses[200].content["video/mp4"].schema).toEqual({ type: "string", format: "binary" });
    expect(Object.keys(op.responses[206].content)).toEqual(["video/mp4"]);
    expect(Object.keys(op.responses[200].headers)).toEqual(expect.arrayContaining(["Content-Length", "Accept-Ranges", "ETag"]));
    expect(Object.keys(op.responses[206].headers)).toEqual(expect.arrayContaining(["Content-Length", "Accept-Ranges", "Content-Range"]));
    expect(op.responses[304]).toBeDefined();
    expect(op.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual(["path id", "header Range", "header If-Range", "header If-None-Match"]);
    // the errors stay JSON envelopes
    for (const status of ["404", "409", "410", "416"]) expect(Object.keys(op.responses[status].content)).toEqual(["application/json"]);
    const head = spec.paths["/v1/videos/generations/{id}/content"].head;
    expect(head.responses[200].content).toBeUndefined();
    expect(Object.keys(head.responses[200].headers)).toContain("Content-Length");
  });

  test("the progress stream is text/event-stream", () => {
    const op = spec.paths["/v1/videos/generations/{id}/events"].get;
    expect(Object.keys(op.responses[200].content)).toEqual(["text/event-stream"]);
    expect(op.responses[200].content["text/event-stream"].schema.type).toBe("string");
    expect(op.responses[200].content["text/event-stream"].example).toContain("event: video.generation.");
    expect(Object.keys(op.responses[404].content)).toEqual(["application/json"]);
  });

  test("`webhooks` lists the four job events, the budget event and the four batch events, each a signed POST of the event payload", () => {
    const types = ["video.generation.completed", "video.generation.failed", "video.generation.cancelled", "video.generation.processing"];
    const batches = ["batch.completed", "batch.failed", "batch.expired", "batch.cancelled"];
    expect(Object.keys(spec.webhooks).sort()).toEqual([...types, "budget.threshold_reached", ...batches].sort());
    const budget = spec.webhooks["budget.threshold_reached"].post;
    expect(budget.parameters.map((p: any) => p.name)).toEqual(["webhook-id", "webhook-timestamp", "webhook-signature"]);
    expect(budget.requestBody.content["application/json"].schema.properties.data.required).toEqual(expect.arrayContaining(["window_id", "threshold", "limit", "spent", "resets_at"]));
    for (const type of types) {
      const post = spec.webhooks[type].post;
      expect(post.parameters.map((p: any) => p.name)).toEqual(["webhook-id", "webhook-timestamp", "webhook-signature"]);
      const schema = post.requestBody.content["application/json"].schema;
      expect(schema.required).toEqual(expect.arrayContaining(["type", "timestamp", "data"]));
      expect(schema.properties.type.enum ?? schema.properties.type.anyOf?.map((x: any) => x.const)).toContain(type);
      expect(schema.properties.data.required).toEqual(expect.arrayContaining(["id", "object", "status", "model", "urls"]));
      expect(Object.keys(schema.properties.data.properties.urls.properties)).toEqual(["poll", "events", "content"]);
    }
    for (const type of batches) {
      const schema = spec.webhooks[type].post.requestBody.content["application/json"].schema;
      expect(schema.properties.data.required).toEqual(expect.arrayContaining(["id", "object", "status", "request_counts", "output_file_id", "error_file_id"]));
    }
  });
});

describe("GET /", () => {
  test("a browser is sent to /docs; other clients are told where things are", async () => {
    const html = await fetch(`${s.url}/`, { headers: { accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect([html.status, html.headers.get("location")]).toEqual([302, "/docs"]);
    const json = await fetch(`${s.url}/`);
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({ docs: "/docs", openapi: "/docs/json" });
  });
});

describe("docs UI", () => {
  test("/docs and /docs/ serve the same page, configured for offline use", async () => {
    const [a, b] = await Promise.all([fetch(`${s.url}/docs`).then((r) => r.text()), fetch(`${s.url}/docs/`).then((r) => r.text())]);
    expect(b).toBe(a);
    const config = JSON.parse(/data-configuration='([^']*)'/.exec(a)![1]!);
    expect(config).toMatchObject({ authentication: { preferredSecurityScheme: "bearer" }, url: "/docs/json", cdn: "/docs/assets/scalar.js", withDefaultFonts: false, agent: { disabled: true }, showDeveloperTools: "never", hideClientButton: true, hideTestRequestButton: true, telemetry: false });
    expect(a).not.toMatch(/https?:\/\/(?!localhost)/);
  });

  describe("in chromium, with every other origin unreachable", () => {
    let browser: Browser;
    beforeAll(async () => { browser = await launchBrowser(); }, 60_000);
    afterAll(() => browser?.close());

    for (const path of ["/docs", "/docs/"]) {
      test(`${path} renders the operations from the local document; nothing leaves the machine`, async () => {
        const origin = s.url.replace("127.0.0.1", "localhost"); // "localhost" is where Scalar turns on its online extras
        const context = await browser.newContext();
        await context.route((url) => !url.href.startsWith(origin + "/"), (route) => route.abort("internetdisconnected"));
        const w = watch(context, origin);
        try {
          const page = await context.newPage();
          await page.goto(origin + path);
          await see(page.locator("body"), "Readiness", { timeout: 30_000 }); // an operation title from /docs/json
          await see(page.locator("body"), "Image-to-video jobs, OpenAI-compatible chat completions"); // the document's description
          await see(page.locator("body"), /Selected Auth Type:\s*bearer/); // a client API key, not "No authentication"
          await page.getByText("chat", { exact: true }).first().click(); // open the chat group in the sidebar
          await see(page.locator("body"), "Create a chat completion");
          const text = await page.locator("body").innerText();
          expect(text).not.toContain("Document could not be loaded");
          for (const online of ["Ask AI", "Deploy on Scalar", "Test Request"]) expect(text).not.toContain(online);
          expect(w.foreign).toEqual([]);
          expect(w.errors).toEqual([]);
        } finally {
          await context.close();
        }
      }, 60_000);
    }
  });
});
