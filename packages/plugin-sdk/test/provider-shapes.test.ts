/**
 * SDK 1.4's readings of two more providers' wire formats, against a real HTTP server: Google's
 * error body (its status as the code, `google.rpc.RetryInfo` as the wait), Azure OpenAI's
 * `retry-after-ms`, and server-sent events that end with the body instead of `[DONE]`
 * (`streamGenerateContent?alt=sse`).
 */
import { afterAll, expect, test } from "bun:test";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { callUpstream, isPluginError, parseErrorBody, readJsonSse, type PluginError } from "../src/index.ts";

let handler: (res: ServerResponse) => void = (res) => void res.end("{}");
const server = createServer((_req, res) => handler(res));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
afterAll(() => server.close());
const call = { signal: new AbortController().signal };
const failure = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e) => e);
  expect(isPluginError(err)).toBe(true);
  return err as PluginError;
};

const GOOGLE_429 = JSON.stringify({ error: { code: 429, message: "Resource has been exhausted (e.g. check quota).", status: "RESOURCE_EXHAUSTED", details: [
  { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests" }] },
  { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37.5s" },
] } });

test("parseErrorBody: Google's shape gives its status as the code and RetryInfo as the wait", () => {
  expect(parseErrorBody(GOOGLE_429)).toEqual({ message: "Resource has been exhausted (e.g. check quota).", code: "RESOURCE_EXHAUSTED", param: null, retryAfterSeconds: 38 });
  expect(parseErrorBody(JSON.stringify({ error: { code: 400, message: "bad", status: "INVALID_ARGUMENT" } }))).toEqual({ message: "bad", code: "INVALID_ARGUMENT", param: null });
});

test("a 429 with only a body RetryInfo, and one with only retry-after-ms, both carry their wait", async () => {
  handler = (res) => void res.writeHead(429, { "content-type": "application/json" }).end(GOOGLE_429);
  const g = await failure(callUpstream({ url, json: {} }, call));
  expect([g.status, g.code, g.retryAfterSeconds]).toEqual([429, "RESOURCE_EXHAUSTED", 38]);
  handler = (res) => void res.writeHead(429, { "content-type": "application/json", "retry-after-ms": "2500" }).end(JSON.stringify({ error: { code: "429", message: "Rate limit is exceeded." } }));
  const a = await failure(callUpstream({ url, json: {} }, call));
  expect([a.status, a.code, a.retryAfterSeconds]).toEqual([429, "429", 3]);
  // both headers: the finer one wins
  handler = (res) => void res.writeHead(503, { "retry-after-ms": "900", "retry-after": "5" }).end();
  expect((await failure(callUpstream({ url, json: {} }, call))).retryAfterSeconds).toBe(1);
});

test("jsonSse: every event until the body ends, no end marker needed; a non-JSON payload is malformed", async () => {
  handler = (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write('data: {"n":1}\r\n\r\n');
    res.end('data: {"n":2}\r\n\r\n');
  };
  const res = await callUpstream({ url, json: {}, stream: true }, call);
  const seen: unknown[] = [];
  for await (const e of res.jsonSse()) seen.push(e.json);
  expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
  const bad = (async () => { for await (const _ of readJsonSse((async function* () { yield new TextEncoder().encode("data: nope\n\n"); })())); })();
  expect((await failure(bad)).kind).toBe("malformed");
});
