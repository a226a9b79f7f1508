/**
 * The socket reelay really listens on (src/listen.ts, as main.ts and boot.ts open it): whatever
 * throws outside the app's own error handling, sync or async, is answered by its last-resort
 * handler with the enveloped 500 and a request id, never by Bun's development error page, and the
 * cause goes to the log under that id.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { listen, type Listener } from "../../src/listen.ts";
import { createLogger } from "../../src/logger.ts";
import { testConfig } from "../support/harness.ts";

const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l));
    done();
  },
});
let listener: Listener;
let base: string;

beforeAll(() => {
  const config = testConfig({ PORT: "0", REELAY_LOG_LEVEL: "error" });
  listener = listen(config, createLogger(config, sink));
  base = `http://127.0.0.1:${listener.server.port}`;
});
afterAll(() => {
  listener?.server.stop(true);
});

test("listen() serves in production mode, and its startup gate answers before the app exists", async () => {
  expect(listener.server.development).toBe(false);
  const res = await fetch(base + "/healthz");
  expect(res.status).toBe(200);
  expect(res.headers.get("x-request-id")).toMatch(/^req_\w{16}$/);
  expect(await res.json()).toEqual({ status: "ok" });
});

test("whatever the app throws, sync or async, the listener answers the enveloped 500 with a request id and logs the cause under it", async () => {
  listener.gate.open((req) => {
    if (new URL(req.url).pathname === "/async") return Promise.reject(new Error("async boom at /secret/path.ts:34"));
    throw new Error("boom at /secret/path.ts:12");
  });
  for (const path of ["/sync", "/async"]) {
    const res = await fetch(base + path);
    expect(res.status).toBe(500);
    const id = res.headers.get("x-request-id");
    expect(id).toMatch(/^req_\w{16}$/);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { message: expect.stringContaining("x-request-id"), type: "server_error", param: null, code: "internal_error" } });
    expect(text).not.toMatch(/boom|secret|\.ts|<html/i);
    const logged = lines.find((l) => l.requestId === id);
    expect(logged).toMatchObject({ msg: "unhandled error outside the app's error handling", err: { message: expect.stringContaining("boom") } });
  }
});
