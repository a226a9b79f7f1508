/** callUpstream against real HTTP servers: each failure becomes the kind the host expects, at the right moment. */
import { afterAll, describe, expect, test } from "bun:test";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { callUpstream, isPluginError, parseErrorBody, type PluginError, type UpstreamTimeouts } from "../src/index.ts";

type Handler = (res: ServerResponse, body: string) => void | Promise<void>;
let handler: Handler = (res) => void res.end("{}");
let aborted = 0;
// node:http: it can send headers and body bytes apart, which the deadlines need
const server = createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  res.on("close", () => { if (!res.writableFinished) aborted++; });
  await handler(res, body);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/x`;
afterAll(() => server.close());

const call = (signal = new AbortController().signal) => ({ signal });
const quick: Partial<UpstreamTimeouts> = { connectMs: 150, firstByteMs: 150, idleMs: 150, totalMs: 2_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function failure(p: Promise<unknown>): Promise<PluginError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(isPluginError(err)).toBe(true);
  return err;
}
const kindOf = (e: PluginError) => ({ kind: e.kind, retryable: e.retryable });

describe("callUpstream", () => {
  test("sends JSON and reads JSON", async () => {
    handler = (res, body) => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ echo: JSON.parse(body) }));
    const res = await callUpstream({ url, json: { a: 1 } }, call());
    expect(await res.json()).toEqual({ echo: { a: 1 } });
  });

  test("a refused connection is retried (100, 300 ms), then `connect`, retryable", async () => {
    const t = performance.now();
    const e = await failure(callUpstream({ url: "http://127.0.0.1:1/x", json: {} }, call()));
    expect(kindOf(e)).toEqual({ kind: "connect", retryable: true });
    expect(performance.now() - t).toBeGreaterThanOrEqual(390);
    const none = performance.now();
    await failure(callUpstream({ url: "http://127.0.0.1:1/x", json: {} }, call(), { retryRefusedMs: [] }));
    expect(performance.now() - none).toBeLessThan(200); // a router in front retries elsewhere instead
  });

  test("a reset before any answer (a keep-alive connection closed as it was reused) is sent once more; reset twice → `connect`, retryable", async () => {
    let seen = 0;
    handler = (res, body) => {
      seen++;
      if (seen === 1) return void res.socket?.resetAndDestroy();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ echo: JSON.parse(body), seen }));
    };
    const res = await callUpstream({ url, json: { a: 1 } }, call());
    expect(await res.json()).toEqual({ echo: { a: 1 }, seen: 2 });
    seen = 0;
    handler = (res) => { seen++; res.socket?.resetAndDestroy(); };
    const e = await failure(callUpstream({ url, json: {} }, call()));
    expect([e.kind, e.retryable, e.message, seen]).toEqual(["connect", true, "upstream connection reset", 2]);
  });

  test("non-2xx → upstream_http with the upstream's own message, code and param", async () => {
    handler = (res) => void res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "max_tokens is too large", type: "invalid_request_error", param: "max_tokens", code: "context_length_exceeded" } }));
    const e = await failure(callUpstream({ url, json: {} }, call()));
    expect([e.kind, e.status, e.message, e.code, e.param, e.retryable]).toEqual(["upstream_http", 400, "max_tokens is too large", "context_length_exceeded", "max_tokens", false]);
    handler = (res) => void res.writeHead(503).end("<html>busy</html>");
    const busy = await failure(callUpstream({ url, json: {} }, call()));
    expect([busy.status, busy.message, busy.retryable]).toEqual([503, "upstream answered HTTP 503", true]);
  });

  test("headers later than connectMs (a stream) → timeout, retryable: nothing was answered", async () => {
    handler = async (res) => { await sleep(600); res.end(); };
    expect(kindOf(await failure(callUpstream({ url, json: {}, stream: true }, call(), { timeouts: quick })))).toEqual({ kind: "timeout", retryable: true });
  });

  test("first byte later than firstByteMs → timeout, not retryable (the upstream took the request)", async () => {
    handler = async (res) => { res.writeHead(200).flushHeaders(); await sleep(600); res.end("x"); };
    const res = await callUpstream({ url, json: {}, stream: true }, call(), { timeouts: quick });
    const e = await failure((async () => { for await (const _ of res.chunks()) {} })());
    expect(kindOf(e)).toEqual({ kind: "timeout", retryable: false });
    expect(e.message).toContain("first byte (150 ms)");
  });

  test("a pause longer than idleMs after body bytes → stream_interrupted", async () => {
    handler = async (res) => { res.writeHead(200).write("part"); await sleep(600); res.end(); };
    const res = await callUpstream({ url, json: {}, stream: true }, call(), { timeouts: quick });
    const e = await failure((async () => { for await (const _ of res.chunks()) {} })());
    expect(kindOf(e)).toEqual({ kind: "stream_interrupted", retryable: false });
    expect(e.message).toContain("idle (150 ms) timeout after 4 bytes");
  });

  test("a connection reset after body bytes → stream_interrupted", async () => {
    handler = async (res) => { res.writeHead(200).write("part"); await sleep(50); res.socket?.destroy(); };
    const res = await callUpstream({ url, json: {}, stream: true }, call());
    expect(kindOf(await failure((async () => { for await (const _ of res.chunks()) {} })()))).toEqual({ kind: "stream_interrupted", retryable: false });
  });

  test("the caller's abort ends the request at once with the caller's reason", async () => {
    handler = async (res) => { res.writeHead(200).write("part"); await sleep(2_000); res.end(); };
    aborted = 0;
    const c = new AbortController();
    const res = await callUpstream({ url, json: {}, stream: true }, call(c.signal));
    const reading = (async () => { for await (const _ of res.chunks()) c.abort(new Error("client went away")); })().catch((e) => e);
    expect(((await reading) as Error).message).toBe("client went away");
    for (let i = 0; i < 20 && aborted === 0; i++) await sleep(20);
    expect(aborted).toBe(1);
  });

  test("json(): not JSON → malformed; larger than the cap → malformed, read stopped", async () => {
    handler = (res) => void res.end("<html>oops</html>");
    expect((await failure((await callUpstream({ url, json: {} }, call())).json())).kind).toBe("malformed");
    handler = (res) => void res.end("x".repeat(200_000));
    const e = await failure((await callUpstream({ url, json: {} }, call())).json(100_000));
    expect([e.kind, e.message]).toEqual(["malformed", "upstream answer is larger than 100000 bytes"]);
  });

  test("secrets are redacted from what leaves the call", async () => {
    handler = (res) => void res.writeHead(401).end(JSON.stringify({ error: "bad key sk-secret-123456789" }));
    const e = await failure(callUpstream({ url, json: {} }, call(), { redact: (t) => t.replaceAll("sk-secret-123456789", "[redacted]") }));
    expect(e.message).toBe("bad key [redacted]");
  });
});

test("parseErrorBody reads the usual error shapes", () => {
  expect(parseErrorBody(`{"error":{"message":"m","type":"t","param":"p","code":"c"}}`)).toEqual({ message: "m", code: "c", param: "p" });
  expect(parseErrorBody(`{"object":"error","message":"vllm says","type":"BadRequestError","code":400}`)).toEqual({ message: "vllm says", code: "BadRequestError", param: null });
  expect(parseErrorBody(`{"error":"model 'x' not found"}`)).toEqual({ message: "model 'x' not found", code: undefined, param: null });
  expect(parseErrorBody(`{"detail":[{"msg":"field required","type":"missing"},{"msg":"bad type"}]}`)).toEqual({ message: "field required; bad type", code: "missing", param: null });
  expect(parseErrorBody(`{"title":"Unauthorized","detail":""}`).message).toBe("Unauthorized");
  expect(parseErrorBody("<html>")).toEqual({});
});
