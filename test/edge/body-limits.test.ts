/**
 * Oversized bodies at the real limit (16 MiB), 2× and 10× over, declared (Content-Length) or not
 * (chunked): each gets the 413 envelope, an x-request-id and a log line, and the server's memory
 * does not grow by the body. A separate process, so its memory is its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase } from "../support/harness.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { processMemoryMiB, rawRequest } from "../support/raw-http.ts";

const LIMIT = 16 * 1024 * 1024;
let server: ChildServer;
let databaseUrl: string;
let key: string;
const figures: string[] = [];

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  server = await spawnServer({ DATABASE_URL: databaseUrl });
  key = (await newClientOn(server)).key;
});
afterAll(async () => {
  await server.stop();
  await dropDatabase(databaseUrl);
  console.log(`body limits (limit ${LIMIT / 1048576} MiB):\n  ${figures.join("\n  ")}`);
});

describe("every oversized body gets the 413 envelope without being read", () => {
  for (const times of [2, 10]) {
    for (const chunked of [false, true]) {
      test(`${times}× the limit, ${chunked ? "chunked" : "Content-Length"}`, async () => {
        const before = processMemoryMiB(server.pid);
        const res = await rawRequest(server.url, {
          method: "POST", path: "/v1/embeddings", chunked, bodyBytes: LIMIT * times,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        });
        const after = processMemoryMiB(server.pid);
        expect(res.status).toBe(413);
        expect(res.headers["x-request-id"]).toMatch(/^req_\w{16}$/);
        const body = JSON.parse(res.body);
        expect(body.error).toMatchObject({ type: "invalid_request_error", code: "payload_too_large" });
        expect(body.error.message).toContain(String(LIMIT));
        // the server stopped us well before the end of the body
        expect(res.sentBodyBytes).toBeLessThan(LIMIT * times);
        // at most the limit (plus socket buffers) was held: the peak grew by less than limit + 16 MiB
        expect(after.peak - before.peak).toBeLessThan(LIMIT / 1048576 + 16);
        figures.push(`${times}× ${chunked ? "chunked" : "Content-Length"}: sent ${(res.sentBodyBytes / 1048576).toFixed(1)} MiB before the answer; server RSS ${before.rss.toFixed(0)} → ${after.rss.toFixed(0)} MiB, peak ${before.peak.toFixed(0)} → ${after.peak.toFixed(0)} MiB`);
        // the log line is written after the answer (in batches): wait for it rather than a fixed time
        let line: Record<string, unknown> | undefined;
        for (const end = Date.now() + 5_000; !line && Date.now() < end; await Bun.sleep(20)) line = server.logLines().find((l) => l.requestId === res.headers["x-request-id"]);
        expect(line).toMatchObject({ status: 413, method: "POST" });
      });
    }
  }

  test("a body sent to a route that takes none is never read (10× the limit, chunked)", async () => {
    for (const [method, path, status] of [["GET", "/v1/models", 200], ["POST", "/v1/videos/generations/vid_none/cancel", 404]] as const) {
      const before = processMemoryMiB(server.pid);
      const res = await rawRequest(server.url, { method, path, chunked: true, bodyBytes: LIMIT * 10, headers: { authorization: `Bearer ${key}` } });
      const after = processMemoryMiB(server.pid);
      expect(res.status).toBe(status);
      expect(res.sentBodyBytes).toBeLessThan(LIMIT * 10);
      expect(after.peak - before.peak).toBeLessThan(16);
    }
  });

  test("a chunked body just under the limit is read and served", async () => {
    const res = await rawRequest(server.url, {
      method: "POST", path: "/admin/accounts", chunked: true, body: JSON.stringify({ name: "x".repeat(LIMIT - 200) }),
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    });
    // read whole and parsed: the field's own limit answers, not the body limit
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({ param: "name", message: expect.stringContaining("at most 200 characters") });
  });
});
