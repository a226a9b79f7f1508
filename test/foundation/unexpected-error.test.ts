import { expect, test } from "bun:test";
import { Writable } from "node:stream";
import { createApp } from "../../src/app.ts";
import type { AppDeps } from "../../src/deps.ts";
import { createLogger } from "../../src/logger.ts";
import { noOps } from "../../src/ops/hooks.ts";
import { testConfig } from "../support/harness.ts";

test("an unexpected failure is a generic 500 envelope; the cause is logged, not returned", async () => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const config = testConfig();
  const broken = new Error("connection to 10.1.2.3 refused (secret detail)");
  const deps = {
    config,
    logger: createLogger({ logLevel: "error", logPretty: false }, sink),
    database: { kind: "postgres", db: { execute: async () => { throw broken; } }, close: async () => {} },
    registry: { get: () => undefined, list: () => [], close: async () => {} },
    auth: { authenticateRequest: async () => ({ keyId: "k", accountId: "a", keyPrefix: "rl-x", scopes: null, allowedModels: null, limits: { rpm: null, tpm: null, videoConcurrency: null } }), evict() {} },
    ...noOps,
    billing: { sync: async () => {} },
  } as unknown as AppDeps;
  const app = createApp(deps);
  const res = await app.handle(new Request("http://localhost/v1/account", { headers: { authorization: "Bearer rl-whatever" } }));
  expect(res.status).toBe(500);
  const body = await res.json();
  expect(body.error.type).toBe("server_error");
  expect(body.error.message).not.toContain("10.1.2.3");
  expect(JSON.stringify(body)).not.toContain("secret detail");
  await Bun.sleep(20);
  expect(lines.join("")).toContain("secret detail");
});
