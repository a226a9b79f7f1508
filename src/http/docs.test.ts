/**
 * The API docs: the OpenAPI document says what reelay accepts, docs/api.md's route table matches
 * it, and the Scalar UI renders at /docs and /docs/ in a real browser with no request leaving the
 * machine (every other origin is blocked, as on a host without internet).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchBrowser, see, watch } from "../../console/test/browser.ts";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

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

  test("`webhooks` lists the four job events and the budget event, each a signed POST of the event payload", () => {
    const types = ["video.generation.completed", "video.generation.failed", "video.generation.cancelled", "video.generation.processing"];
    expect(Object.keys(spec.webhooks).sort()).toEqual([...types, "budget.threshold_reached"].sort());
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
    expect(config).toMatchObject({ url: "/docs/json", cdn: "/docs/assets/scalar.js", withDefaultFonts: false, agent: { disabled: true }, showDeveloperTools: "never", hideClientButton: true, hideTestRequestButton: true, telemetry: false });
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
