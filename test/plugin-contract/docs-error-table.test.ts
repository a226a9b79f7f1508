/**
 * docs/writing-a-plugin.md's table of error kinds says what the SDK's describeFailure does (the one
 * table the routes and the video scheduler use): status, code and retry, row by row.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describeFailure, PluginError } from "@reelay/plugin-sdk";

const doc = readFileSync(join(import.meta.dir, "../../docs/writing-a-plugin.md"), "utf8");
const table = doc.slice(doc.indexOf("<!-- error-kinds-table"), doc.indexOf("<!-- /error-kinds-table -->"));
const rows = table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| kind") && !l.startsWith("|---"));

/** one error per row, as its first column names it */
const EXAMPLES: Record<string, unknown> = {
  "`invalid_request`": new PluginError("invalid_request", "bad", { param: "messages" }),
  "`upstream_http` 4xx": new PluginError("upstream_http", "no such model", { status: 404 }),
  "`upstream_http` 401 / 403": new PluginError("upstream_http", "key refused", { status: 401 }),
  "`upstream_http` 429": new PluginError("upstream_http", "slow down", { status: 429 }),
  "`upstream_http` 5xx": new PluginError("upstream_http", "boom", { status: 500 }),
  "`connect`": new PluginError("connect", "refused"),
  "`timeout`": new PluginError("timeout", "slow"),
  "`malformed`": new PluginError("malformed", "html"),
  "`failed`": new PluginError("failed", "refused"),
  "`overloaded`": new PluginError("overloaded", "full"),
  "`stream_interrupted`": new PluginError("stream_interrupted", "reset"),
  "anything else thrown": new TypeError("bug"),
};

test("every kind has a row, and each row says what describeFailure does", () => {
  expect(rows.map((r) => r.split("|")[1]!.trim()).sort()).toEqual(Object.keys(EXAMPLES).sort());
  for (const row of rows) {
    const cells = row.split("|").map((c) => c.trim());
    const [kind, , client, , retried] = [cells[1]!, cells[2], cells[3]!, cells[4], cells[5]!];
    const f = describeFailure(EXAMPLES[kind]);
    const status = /^(\d{3})/.exec(client)?.[1];
    const code = /`([a-z_]+)`/.exec(client)?.[1] ?? null;
    const doc = { kind, status: status ? Number(status) : "the same status", code, retried: retried === "yes" };
    const real = { kind, status: client.startsWith("the same status") ? "the same status" : f.status, code: code === null ? null : f.code, retried: f.retryable };
    if (client.startsWith("the same status")) expect(f.status).toBe(404);
    expect(doc).toEqual(real);
  }
});
