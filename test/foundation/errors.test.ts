import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer({ REELAY_MAX_BODY_BYTES: "65536" });
  key = (await s.newClient()).key;
});
afterAll(() => s.close());

const admin = (path: string, body: string, method = "POST") =>
  fetch(s.url + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body });

function expectEnvelope(body: any) {
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|node_modules|stack/);
}

describe("one error envelope everywhere", () => {
  test("validation errors are 400 with param naming the field", async () => {
    const cases: Array<[string, string]> = [
      [JSON.stringify({ name: 5 }), "name"],
      [JSON.stringify({}), "name"],
      [JSON.stringify({ name: "x", credits: -1 }), "credits"],
      [JSON.stringify({ name: "x", credits: "lots" }), "credits"],
    ];
    for (const [body, param] of cases) {
      const res = await admin("/admin/accounts", body);
      expect(res.status).toBe(400);
      const json = await res.json();
      expectEnvelope(json);
      expect(json.error.type).toBe("invalid_request_error");
      expect(json.error.param).toBe(param);
    }
    const q = await fetch(s.url + "/v1/usage?limit=abc", { headers: { authorization: `Bearer ${key}` } });
    expect(q.status).toBe(400);
    expect((await q.json()).error.param).toBe("limit");
  });

  test("malformed JSON is 400 invalid_json, never 500", async () => {
    for (const body of ["{bad", '{"name": "x",}', "[1,2", "\u0000"]) {
      const res = await admin("/admin/accounts", body);
      expect(res.status).toBe(400);
      const json = await res.json();
      expectEnvelope(json);
      expect(json.error.code).toBe("invalid_json");
    }
  });

  test("unknown route 404, wrong method 405 with Allow", async () => {
    const nf = await fetch(s.url + "/v1/nothing-here");
    expect(nf.status).toBe(404);
    expectEnvelope(await nf.json());
    const wm = await fetch(s.url + "/v1/models", { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
    expect(wm.status).toBe(405);
    expect(wm.headers.get("allow")).toBe("GET");
    const json = await wm.json();
    expectEnvelope(json);
    expect(json.error.code).toBe("method_not_allowed");
  });

  test("bodies over the limit are 413", async () => {
    const res = await admin("/admin/accounts", JSON.stringify({ name: "x".repeat(70_000) }));
    expect(res.status).toBe(413);
    expectEnvelope(await res.json());
  });

  test("every response carries its own x-request-id, even when the client sends one", async () => {
    const ids = new Set<string>();
    for (const path of ["/healthz", "/v1/models", "/nope", "/docs/json"]) {
      const res = await fetch(s.url + path, { headers: { "x-request-id": "client-chosen-id" } });
      const id = res.headers.get("x-request-id")!;
      expect(id).toMatch(/^req_\w{16}$/);
      ids.add(id);
    }
    expect(ids.size).toBe(4);
    // the id is the billing reference of a request: a client reusing one still gets served and billed once per request
    for (let i = 0; i < 2; i++) {
      const res = await fetch(s.url + "/v1/embeddings", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": "same-id-twice" }, body: JSON.stringify({ model: "use-lite", input: "hello" }) });
      expect(res.status).toBe(200);
    }
  });
});

describe("health and docs", () => {
  test("/healthz and /readyz", async () => {
    expect(await (await fetch(s.url + "/healthz")).json()).toEqual({ status: "ok" });
    const ready = await fetch(s.url + "/readyz");
    expect(ready.status).toBe(200);
    const body = await ready.json();
    expect(body.status).toBe("ready");
    expect(body.checks[0]).toMatchObject({ name: "database", ok: true, detail: "postgres" });
  });

  test("OpenAPI document and a docs UI that needs no CDN", async () => {
    const doc = await (await fetch(s.url + "/docs/json")).json();
    expect(doc.openapi).toStartWith("3.");
    for (const p of ["/v1/models", "/v1/account", "/v1/usage", "/admin/accounts", "/admin/accounts/{id}/keys", "/healthz"]) expect(doc.paths).toHaveProperty(p);
    const html = await (await fetch(s.url + "/docs")).text();
    expect(html).toContain('src="/docs/assets/scalar.js"');
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./);
    const js = await fetch(s.url + "/docs/assets/scalar.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
  });
});
