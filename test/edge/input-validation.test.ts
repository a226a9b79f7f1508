/**
 * Hostile and careless inputs on every route: deep nesting, NUL characters, numbers out of range,
 * bodies that are not JSON or empty, unknown methods, CORS preflights, nullable OpenAI fields.
 * Each answer is the 400 (or 405/413) envelope naming the field, with an x-request-id, and refused
 * requests leave the money untouched.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN } from "../support/harness.ts";
import { moneyOf, startEdgeServer, type EdgeServer } from "../support/edge-server.ts";
import { rawRequest } from "../support/raw-http.ts";

let e: EdgeServer;
beforeAll(async () => {
  e = await startEdgeServer();
});
afterAll(() => e.close());

type Answer = { status: number; body: any; headers: Headers };
async function call(method: string, path: string, body?: unknown, opts: { admin?: boolean; headers?: Record<string, string>; raw?: boolean } = {}): Promise<Answer> {
  const res = await fetch(e.s.url + path, {
    method,
    headers: { authorization: `Bearer ${opts.admin ? ADMIN_TOKEN : e.key}`, "content-type": "application/json", ...opts.headers },
    body: body === undefined ? undefined : opts.raw ? (body as string) : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, body: json ?? text, headers: res.headers };
}

function expectError(a: Answer, status: number, param: string | null, message?: RegExp) {
  expect({ status: a.status, param: a.body?.error?.param }).toEqual({ status, param });
  expect(Object.keys(a.body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(a.headers.get("x-request-id")).toMatch(/^req_\w{16}$/);
  expect(a.headers.get("content-type")).toContain("application/json");
  if (message) expect(a.body.error.message).toMatch(message);
}

const messages = [{ role: "user", content: "hi" }];
const nest = (depth: number, leaf = "1") => "[".repeat(depth) + leaf + "]".repeat(depth);

describe("deep nesting is refused quickly, whatever the field (13.2, 13.3)", () => {
  const cases: Array<[string, string]> = [
    ["/v1/chat/completions", `{"model":"chat-edge","messages":[{"role":"user","content":"hi"}],"max_tokens":${nest(20_000)}}`],
    ["/v1/chat/completions", `{"model":"chat-edge","messages":[{"role":"user","content":"hi"}],"user":${nest(5_000, '"x"')}}`],
    ["/v1/chat/completions", `{"model":"chat-edge","messages":[{"role":${nest(5_000, '"user"')},"content":"hi"}]}`],
    ["/v1/videos/generations", `{"model":"preview-motion","prompt":${nest(5_000, '"a"')},"image_url":"https://example.com/a.png"}`],
    ["/v1/embeddings", `{"model":"use-lite","input":${nest(100_000, '"a"')}}`],
  ];
  for (const [path, body] of cases) {
    test(`${path} ${body.slice(0, 60)}…`, async () => {
      const a = await call("POST", path, body, { raw: true });
      expectError(a, 400, null, /nested more than 64 levels/);
    });
  }

  test("nesting within the limit passes the reader and reaches validation", async () => {
    const a = await call("POST", "/v1/chat/completions", `{"model":"chat-edge","messages":[{"role":"user","content":"hi"}],"max_tokens":${nest(60)}}`, { raw: true });
    expectError(a, 400, "max_tokens", /'max_tokens': must be an integer from 1 to 2147483647 or null; got an array of 1 item/);
  });
});

describe("NUL characters are refused at the edge, naming the field (13.4)", () => {
  let accountId: string;
  beforeAll(async () => {
    accountId = (await (await e.s.admin("/admin/accounts", { body: { name: "nul-target" } })).json()).id;
  });
  const bodies: Array<[string, string, unknown, string, boolean]> = [
    ["POST", "/v1/videos/generations", { model: "preview-motion", prompt: "a\u0000b", image_url: "https://example.com/a.png" }, "prompt", false],
    ["POST", "/v1/chat/completions", { model: "chat-edge", messages: [{ role: "user", content: "a\u0000" }] }, "messages[0].content", false],
    ["POST", "/v1/embeddings", { model: "use-lite", input: ["ok", "b\u0000"] }, "input[1]", false],
    ["POST", "/admin/accounts", { name: "evil\u0000" }, "name", true],
  ];
  for (const [method, path, body, param, admin] of bodies) {
    test(`${method} ${path} ${param}`, async () => expectError(await call(method, path, body, { admin }), 400, param, /NUL character/));
  }
  test("admin bodies on an account's routes", async () => {
    expectError(await call("POST", `/admin/accounts/${accountId}/keys`, { name: "k\u0000" }, { admin: true }), 400, "name", /NUL/);
    expectError(await call("POST", `/admin/accounts/${accountId}/credits`, { amount: 5, reason: "r\u0000" }, { admin: true }), 400, "reason", /NUL/);
  });
  test("path parameters and query values", async () => {
    expectError(await call("GET", "/v1/videos/generations/%00"), 400, "id", /path parameter 'id'.*NUL/);
    expectError(await call("POST", "/v1/videos/generations/vid_%00/cancel"), 400, "id", /NUL/);
    expectError(await call("GET", "/v1/videos/generations?after=%00"), 400, "after", /query parameter 'after'.*NUL/);
    expectError(await call("GET", "/admin/accounts/acct_%00", undefined, { admin: true }), 400, "id", /NUL/);
    expectError(await call("POST", "/admin/keys/key_%00/revoke", undefined, { admin: true }), 400, "id", /NUL/);
  });
});

describe("every number has a range, checked before use (13.5)", () => {
  let accountId: string;
  beforeAll(async () => {
    accountId = (await (await e.s.admin("/admin/accounts", { body: { name: "ranges" } })).json()).id;
  });
  test("client routes", async () => {
    expectError(await call("GET", "/v1/usage?before=1e20"), 400, "before", /from 1 to 9007199254740991/);
    expectError(await call("GET", "/v1/videos/generations?limit=1e9"), 400, "limit");
    expectError(await call("POST", "/v1/chat/completions", { model: "chat-edge", messages, n: 1e300 }), 400, "n", /from 1 to 128/);
    expectError(await call("POST", "/v1/chat/completions", { model: "chat-edge", messages, max_tokens: 1e300 }), 400, "max_tokens", /from 1 to 2147483647/);
    expectError(await call("POST", "/v1/chat/completions", { model: "chat-edge", messages, max_completion_tokens: -1 }), 400, "max_completion_tokens");
    expectError(await call("POST", "/v1/embeddings", { model: "embed-edge", input: [1e20] }), 400, "input");
    expectError(await call("POST", "/v1/embeddings", { model: "embed-edge", input: "x", dimensions: 1e20 }), 400, "dimensions");
  });
  test("admin routes (int4 limit columns, credits, offsets)", async () => {
    expectError(await call("PATCH", `/admin/accounts/${accountId}/limits`, { requests_per_minute: 3e9 }, { admin: true }), 400, "requests_per_minute", /from 0 to 2147483647/);
    expectError(await call("POST", `/admin/accounts/${accountId}/keys`, { name: "k", tokens_per_minute: 3e9 }, { admin: true }), 400, "tokens_per_minute");
    expectError(await call("GET", "/admin/accounts?offset=1e20", undefined, { admin: true }), 400, "offset", /from 0 to 1000000/);
    expectError(await call("GET", `/admin/accounts/${accountId}/ledger?before=1e20`, undefined, { admin: true }), 400, "before");
    expectError(await call("POST", `/admin/accounts/${accountId}/credits`, { amount: 1e300 }, { admin: true }), 400, "amount", /from 1 to 1000000000000000/);
    expectError(await call("POST", `/admin/accounts/${accountId}/adjustments`, { amount: -1e300, reason: "x" }, { admin: true }), 400, "amount");
    expectError(await call("POST", "/admin/accounts", { name: "x", amount: 1e16 }, { admin: true }), 400, "amount");
    // the edge values themselves are accepted
    expect((await call("PATCH", `/admin/accounts/${accountId}/limits`, { requests_per_minute: 2147483647 }, { admin: true })).status).toBe(200);
  });
  test("refused requests leave the money as it was", async () => {
    const before = await moneyOf(e.s, e.accountId);
    await call("POST", "/v1/chat/completions", { model: "chat-edge", messages, n: 1e300 });
    await call("POST", "/v1/videos/generations", { model: "preview-motion", prompt: "a\u0000", image_url: "https://example.com/a.png" });
    expect(await moneyOf(e.s, e.accountId)).toEqual(before);
  });
});

describe("bodies that are not JSON, or empty, say so (14.4)", () => {
  test("form-encoded (curl -d), text/plain and no Content-Type", async () => {
    for (const type of ["application/x-www-form-urlencoded", "text/plain;charset=UTF-8"]) {
      const a = await call("POST", "/v1/embeddings", "model=use-lite&input=hi", { raw: true, headers: { "content-type": type } });
      expectError(a, 400, null, new RegExp(`Content-Type: application/json.*'${type.split(";")[0]}'`));
      expect(a.body.error.code).toBe("invalid_content_type");
    }
    const none = await rawRequest(e.s.url, { method: "POST", path: "/v1/chat/completions", body: JSON.stringify({ model: "chat-edge", messages }), headers: { authorization: `Bearer ${e.key}` } });
    expect(none.status).toBe(400);
    expect(JSON.parse(none.body).error.message).toMatch(/Content-Type: application\/json.*missing/);
  });
  test("empty bodies, declared or chunked", async () => {
    for (const path of ["/v1/embeddings", "/v1/chat/completions", "/v1/videos/generations", "/admin/accounts"]) {
      const a = await call("POST", path, "", { raw: true, admin: path.startsWith("/admin") });
      expectError(a, 400, null, /request body is empty/);
    }
    const chunked = await rawRequest(e.s.url, { method: "POST", path: "/v1/embeddings", chunked: true, body: "", headers: { authorization: `Bearer ${e.key}`, "content-type": "application/json" } });
    expect([chunked.status, JSON.parse(chunked.body).error.code]).toEqual([400, "empty_body"]);
  });
  test("invalid UTF-8 and malformed JSON", async () => {
    const bad = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const res = await fetch(e.s.url + "/v1/embeddings", { method: "POST", headers: { authorization: `Bearer ${e.key}`, "content-type": "application/json" }, body: bad });
    expectError({ status: res.status, body: await res.json(), headers: res.headers }, 400, null, /not valid UTF-8/);
    expectError(await call("POST", "/v1/embeddings", '{"model": "use-lite",', { raw: true }), 400, null, /could not parse the JSON body/);
  });
  test("bodyless POST routes ignore what they are sent", async () => {
    const a = await call("POST", "/v1/videos/generations/vid_nonexistent/cancel", "garbage", { raw: true, headers: { "content-type": "text/plain" } });
    expect(a.status).toBe(404);
  });
});

describe("one plain-words validation message mapping (14.5)", () => {
  let accountId: string;
  beforeAll(async () => {
    accountId = (await (await e.s.admin("/admin/accounts", { body: { name: "msgs" } })).json()).id;
  });
  test("admin amounts, scopes, missing fields", async () => {
    expect((await call("POST", `/admin/accounts/${accountId}/credits`, { amount: -5 }, { admin: true })).body.error.message)
      .toBe("Invalid field 'amount': must be an integer from 1 to 1000000000000000; got -5.");
    expect((await call("POST", `/admin/accounts/${accountId}/credits`, { amount: 2.5 }, { admin: true })).body.error.message)
      .toBe("Invalid field 'amount': must be an integer from 1 to 1000000000000000; got 2.5.");
    expect((await call("POST", `/admin/accounts/${accountId}/credits`, { amount: "100" }, { admin: true })).body.error.message)
      .toBe("Invalid field 'amount': must be an integer from 1 to 1000000000000000; got \"100\".");
    const scope = await call("POST", `/admin/accounts/${accountId}/keys`, { name: "k", scopes: ["chat", "admin"] }, { admin: true });
    expectError(scope, 400, "scopes[1]");
    expect(scope.body.error.message).toBe("Invalid field 'scopes[1]': must be one of 'chat', 'embeddings', 'video'; got \"admin\".");
    expect((await call("POST", `/admin/accounts/${accountId}/keys`, { name: "k", scopes: "chat" }, { admin: true })).body.error.message)
      .toBe("Invalid field 'scopes': must be an array whose items are each one of 'chat', 'embeddings', 'video' (at most 3) or null; got \"chat\".");
    expect((await call("POST", "/v1/embeddings", { input: "x" })).body.error.message).toBe("Missing required field 'model': a non-empty string of at most 256 characters.");
    expect((await call("POST", "/v1/chat/completions", { model: "chat-edge" })).body.error.message).toBe("Missing required field 'messages': a non-empty array of JSON objects.");
    expect((await call("GET", "/v1/usage?limit=abc")).body.error.message).toBe("Invalid query parameter 'limit': must be an integer from 1 to 500; got \"abc\".");
    expect((await call("POST", "/v1/chat/completions", [1, 2])).body.error.message).toBe("The request body must be a JSON object; got an array of 2 items.");
  });
  test("long values are described, never echoed", async () => {
    const a = await call("POST", "/admin/accounts", { name: 12, amount: "y".repeat(100_000) }, { admin: true });
    expect(a.status).toBe(400);
    expect(JSON.stringify(a.body).length).toBeLessThan(400);
  });
  test("account creation takes `amount` like grants; `credits` still works", async () => {
    const a = await call("POST", "/admin/accounts", { name: "new", amount: 1_500_000 }, { admin: true });
    expect([a.status, a.body.balance]).toEqual([201, 1_500_000]);
    const b = await call("POST", "/admin/accounts", { name: "old", credits: 700 }, { admin: true });
    expect([b.status, b.body.balance]).toEqual([201, 700]);
    expectError(await call("POST", "/admin/accounts", { name: "both", credits: 1, amount: 2 }, { admin: true }), 400, "amount");
  });
});

describe("methods (13.13)", () => {
  test("a method a route does not take → 405 envelope with Allow; a known method on no route → 404", async () => {
    for (const method of ["PUT", "DELETE", "PROPFIND", "PATCH"]) {
      const a = await call(method, "/v1/models");
      expectError(a, 405, null);
      expect(a.headers.get("allow")).toBe("GET");
    }
    expectError(await call("PROPFIND", "/v1/nowhere"), 404, null);
  });
});

describe("CORS (14.14)", () => {
  test("preflights are answered; answers expose x-request-id; default origin *", async () => {
    const pre = await fetch(e.s.url + "/v1/chat/completions", { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, x-stainless-os" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect(pre.headers.get("access-control-allow-headers")).toBe("authorization, content-type, x-stainless-os");
    expect(pre.headers.get("access-control-allow-credentials")).toBeNull();
    expect(pre.headers.get("x-request-id")).toMatch(/^req_/);
    const err = await fetch(e.s.url + "/v1/models", { headers: { origin: "https://app.example" } }); // no key: 401
    expect(err.status).toBe(401);
    expect(err.headers.get("access-control-allow-origin")).toBe("*");
    expect(err.headers.get("access-control-expose-headers")).toContain("x-request-id");
  });
});

describe("OpenAI's nullable fields accept null (14.15)", () => {
  test("stream, n, max_tokens, max_completion_tokens, stream_options: null", async () => {
    const a = await call("POST", "/v1/chat/completions", { model: "chat-edge", messages, stream: null, n: null, max_tokens: null, max_completion_tokens: null, stream_options: null });
    expect(a.status).toBe(200);
    expect(a.body.object).toBe("chat.completion");
    // forwarded as sent (unknown and null fields included)
    expect(e.fake.requests.at(-1)!.body.stream).toBeNull();
  });
});
