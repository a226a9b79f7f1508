import { expect, test } from "bun:test";
import { ApiError } from "../errors.ts";
import { PluginError } from "../plugin-sdk/index.ts";
import { apiErrorFromPlugin } from "./plugin-errors.ts";

const view = (e: ApiError) => ({ status: e.status, type: e.type, code: e.code, param: e.param });

test("each PluginError kind gets the status DESIGN.md gives it", () => {
  const cases: Array<[PluginError, ReturnType<typeof view>]> = [
    [new PluginError("invalid_request", "input[0] is empty", { param: "input" }), { status: 400, type: "invalid_request_error", code: "invalid_request", param: "input" }],
    [new PluginError("upstream_http", "bad", { status: 400, code: "bad_input", param: "input" }), { status: 400, type: "invalid_request_error", code: "bad_input", param: "input" }],
    [new PluginError("upstream_http", "no such model", { status: 404 }), { status: 404, type: "not_found_error", code: null, param: null }],
    [new PluginError("upstream_http", "slow down", { status: 429 }), { status: 429, type: "rate_limit_error", code: null, param: null }],
    [new PluginError("upstream_http", "key refused", { status: 401 }), { status: 502, type: "upstream_error", code: "upstream_auth_failed", param: null }],
    [new PluginError("upstream_http", "forbidden", { status: 403 }), { status: 502, type: "upstream_error", code: "upstream_auth_failed", param: null }],
    [new PluginError("upstream_http", "boom", { status: 500 }), { status: 502, type: "upstream_error", code: "upstream_error", param: null }],
    [new PluginError("connect", "connection refused"), { status: 502, type: "upstream_error", code: "upstream_unavailable", param: null }],
    [new PluginError("malformed", "not JSON"), { status: 502, type: "upstream_error", code: "upstream_malformed", param: null }],
    [new PluginError("timeout", "total (100 ms) timeout"), { status: 504, type: "timeout_error", code: "upstream_timeout", param: null }],
  ];
  for (const [err, expected] of cases) expect({ kind: err.kind, upstreamStatus: err.status, ...view(apiErrorFromPlugin(err)) }).toEqual({ kind: err.kind, upstreamStatus: err.status, ...expected });
});

test("ApiErrors pass unchanged; anything else is rethrown (a bug, logged as 500 by the app)", () => {
  const api = new ApiError(402, "insufficient_quota", "no credits");
  expect(apiErrorFromPlugin(api)).toBe(api);
  const bug = new TypeError("x is undefined");
  expect(() => apiErrorFromPlugin(bug)).toThrow(bug);
});
