import { afterAll, beforeAll, expect, test } from "bun:test";
import { ConfigError } from "../../src/errors.ts";
import { startTestServer, testConfig, type TestServer } from "../support/harness.ts";

let listed: TestServer;
let none: TestServer;
beforeAll(async () => {
  [listed, none] = await Promise.all([startTestServer({ REELAY_CORS_ORIGINS: "https://a.example, http://localhost:3000" }), startTestServer({ REELAY_CORS_ORIGINS: "none" })]);
});
afterAll(() => Promise.all([listed.close(), none.close()]));

test("a configured list allows only its origins, with Vary: Origin", async () => {
  const ok = await fetch(listed.url + "/healthz", { headers: { origin: "http://localhost:3000" } });
  expect(ok.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
  expect(ok.headers.get("vary")).toContain("Origin");
  const other = await fetch(listed.url + "/healthz", { headers: { origin: "https://evil.example" } });
  expect(other.headers.get("access-control-allow-origin")).toBeNull();
});

test("`none` sends no CORS headers; preflights then get the 405 envelope", async () => {
  const pre = await fetch(none.url + "/v1/models", { method: "OPTIONS", headers: { origin: "https://a.example", "access-control-request-method": "GET" } });
  expect(pre.status).toBe(405);
  expect(pre.headers.get("access-control-allow-origin")).toBeNull();
});

test("a malformed origin stops the boot naming the setting", () => {
  expect(() => testConfig({ REELAY_CORS_ORIGINS: "https://a.example/path" })).toThrow(ConfigError);
  expect(() => testConfig({ REELAY_CORS_ORIGINS: "a.example" })).toThrow(/REELAY_CORS_ORIGINS/);
});
