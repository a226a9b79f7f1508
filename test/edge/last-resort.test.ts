import { expect, test } from "bun:test";
import { lastResortResponse } from "../../src/http/error-handler.ts";
import { createLogger } from "../../src/logger.ts";
import { testConfig } from "../support/harness.ts";

test("whatever throws outside the app's error handling, Bun.serve answers the enveloped 500 with a request id", async () => {
  const logger = createLogger(testConfig({ REELAY_LOG_LEVEL: "error" }));
  // the same options as boot.ts: production mode, and the last-resort handler
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    development: false,
    fetch: () => {
      throw new Error("boom at /secret/path.ts:12");
    },
    error: (err) => lastResortResponse(err, logger, "req_0123456789abcdef"),
  });
  try {
    const res = await fetch(server.url);
    expect(res.status).toBe(500);
    expect(res.headers.get("x-request-id")).toBe("req_0123456789abcdef");
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { message: expect.stringContaining("x-request-id"), type: "server_error", param: null, code: "internal_error" } });
    expect(text).not.toMatch(/boom|secret|\.ts|<html/i);
  } finally {
    server.stop(true);
  }
});
