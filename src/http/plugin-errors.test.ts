/**
 * Each error kind gets the status the SDK's table gives it, also for errors made by ANOTHER copy of
 * the SDK (an external plugin bundles its own): the host recognises them by their brand.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiError } from "../errors.ts";
import { PluginError } from "../plugin-sdk/index.ts";
import { clientErrorFrom, jobFailureFrom, pluginErrorKind } from "./plugin-errors.ts";

const view = (e: ApiError) => ({ status: e.status, type: e.type, code: e.code, param: e.param, retryAfter: e.headers?.["retry-after"] ?? null });

/** The SDK's errors.ts bundled on its own, as a plugin's build would: a class that is not ours. */
async function foreignPluginError(): Promise<typeof PluginError> {
  const dir = mkdtempSync(join(tmpdir(), "reelay-foreign-sdk-"));
  try {
    const out = await Bun.build({ entrypoints: [join(import.meta.dir, "../../packages/plugin-sdk/src/errors.ts")], outdir: dir, target: "bun", format: "esm" });
    if (!out.success) throw new AggregateError(out.logs, "bundling the SDK failed");
    return (await import(out.outputs[0]!.path)).PluginError;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const Foreign = await foreignPluginError();

test("an error from another bundle of the SDK is not instanceof ours, and is recognised anyway", () => {
  const e = new Foreign("upstream_http", "no such model", { status: 404 });
  expect(e instanceof PluginError).toBe(false);
  expect(view(clientErrorFrom(e))).toEqual({ status: 404, type: "not_found_error", code: null, param: null, retryAfter: null });
  expect(pluginErrorKind(e)).toBe("upstream_http");
});

test("each kind gets the status the table gives it, whichever copy of the SDK made it", () => {
  for (const Make of [PluginError, Foreign]) {
    const cases: Array<[PluginError, ReturnType<typeof view>]> = [
      [new Make("invalid_request", "input[0] is empty", { param: "input" }), { status: 400, type: "invalid_request_error", code: "invalid_request", param: "input", retryAfter: null }],
      [new Make("upstream_http", "bad", { status: 400, code: "bad_input", param: "input" }), { status: 400, type: "invalid_request_error", code: "bad_input", param: "input", retryAfter: null }],
      [new Make("upstream_http", "no such model", { status: 404 }), { status: 404, type: "not_found_error", code: null, param: null, retryAfter: null }],
      [new Make("upstream_http", "slow down", { status: 429 }), { status: 429, type: "rate_limit_error", code: null, param: null, retryAfter: null }],
      [new Make("upstream_http", "slow down", { status: 429, retryAfterSeconds: 7 }), { status: 429, type: "rate_limit_error", code: null, param: null, retryAfter: "7" }],
      [new Make("upstream_http", "slow down", { status: 429, retryAfterSeconds: 86_400 }), { status: 429, type: "rate_limit_error", code: null, param: null, retryAfter: "3600" }],
      [new Make("upstream_http", "key refused", { status: 401 }), { status: 502, type: "upstream_error", code: "upstream_auth_failed", param: null, retryAfter: null }],
      [new Make("upstream_http", "forbidden", { status: 403 }), { status: 502, type: "upstream_error", code: "upstream_auth_failed", param: null, retryAfter: null }],
      [new Make("upstream_http", "boom", { status: 500 }), { status: 502, type: "upstream_error", code: "upstream_error", param: null, retryAfter: null }],
      [new Make("connect", "connection refused"), { status: 502, type: "upstream_error", code: "upstream_unavailable", param: null, retryAfter: null }],
      [new Make("malformed", "not JSON"), { status: 502, type: "upstream_error", code: "upstream_malformed", param: null, retryAfter: null }],
      [new Make("timeout", "total (100 ms) timeout"), { status: 504, type: "timeout_error", code: "upstream_timeout", param: null, retryAfter: null }],
      [new Make("failed", "refused by the content policy", { code: "content_policy" }), { status: 502, type: "upstream_error", code: "content_policy", param: null, retryAfter: null }],
      [new Make("overloaded", "all sequences busy", { retryAfterSeconds: 3 }), { status: 503, type: "service_unavailable", code: "model_overloaded", param: null, retryAfter: "3" }],
      [new Make("stream_interrupted", "connection reset after 120 bytes"), { status: 502, type: "upstream_error", code: "upstream_interrupted", param: null, retryAfter: null }],
    ];
    for (const [err, expected] of cases) expect({ kind: err.kind, upstreamStatus: err.status, ...view(clientErrorFrom(err)) }).toEqual({ kind: err.kind, upstreamStatus: err.status, ...expected });
  }
});

test("the video scheduler reads the same table: retried or failed with the client's code", () => {
  expect(jobFailureFrom(new Foreign("upstream_http", "key refused", { status: 401 }))).toMatchObject({ code: "upstream_auth_failed", retryable: false });
  expect(jobFailureFrom(new Foreign("failed", "refused", { code: "content_policy" }))).toEqual({ code: "content_policy", message: "refused", retryable: false });
  expect(jobFailureFrom(new Foreign("upstream_http", "busy", { status: 503 })).retryable).toBe(true);
  expect(jobFailureFrom(new Foreign("connect", "refused")).retryable).toBe(true);
  expect(jobFailureFrom(new Foreign("failed", "refused", { code: "content_policy", retryable: true })).retryable).toBe(true); // the plugin may say otherwise
  // the host's own 503 (the model is loading) is tried again; a thrown TypeError is a plugin bug, not retried
  expect(jobFailureFrom(new ApiError(503, "service_unavailable", "loading", { code: "model_loading" }))).toMatchObject({ code: "model_loading", retryable: true });
  expect(jobFailureFrom(new TypeError("x is undefined"))).toMatchObject({ code: "plugin_failed", retryable: false });
});

test("ApiErrors pass unchanged; anything else thrown is a 502 plugin_failed that does not leak its text", () => {
  const api = new ApiError(402, "insufficient_quota", "no credits");
  expect(clientErrorFrom(api)).toBe(api);
  const bug = clientErrorFrom(new TypeError("undefined is not an object (evaluating 'o.x.y') at /srv/secret-path.js"));
  expect(view(bug)).toMatchObject({ status: 502, code: "plugin_failed" });
  expect(bug.message).not.toContain("secret-path");
});
