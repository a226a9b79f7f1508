/**
 * Every request the server begins, it ends: its request line is written and (with tracing on) its
 * server span ended, whatever way it went — answered, refused before routing, streamed, cut off by
 * its client. Shutdown waits for those ends (the request log's idle), so the last responses sent
 * before a SIGTERM keep their lines and spans; a begin without an end would make every shutdown
 * wait its full bound, so this also proves the count pairs up.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { createLogger } from "../../src/logger.ts";
import { startTestServer, testConfig, type TestServer } from "../support/harness.ts";

let fake: FakeOpenAI;
let dir: string;
let models: string;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 6 });
  dir = mkdtempSync(join(tmpdir(), "reelay-request-ends-"));
  models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({ builtins: false, models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 1_000_000 }, maxOutputTokens: 16 }] }));
});
afterAll(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** a server whose log lines are kept (JSON, one per line) */
async function serverWithLines(): Promise<{ server: TestServer; lines: () => Array<Record<string, unknown>> }> {
  let text = "";
  const env = { REELAY_MODELS_FILE: models, REELAY_LOG_FORMAT: "json", REELAY_LOG_LEVEL: "info" };
  const logger = createLogger(testConfig(env), { write: (s: string) => void (text += s) } as unknown as NodeJS.WritableStream);
  const server = await startTestServer(env, { logger });
  const lines = () => text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { server, lines };
}

test("requests of every shape end: the request log is idle once they are answered or dropped", async () => {
  const { server } = await serverWithLines();
  try {
    const c = await server.newClient();
    const auth = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
    const chat = (body: unknown, headers: Record<string, string> = auth) => fetch(server.url + "/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(body) });
    const answers = await Promise.all([
      chat({ model: "chat", messages: [{ role: "user", content: "hi" }] }),
      chat({ model: "chat", messages: [{ role: "user", content: "hi" }], stream: true }),
      chat({ model: "nope", messages: [{ role: "user", content: "hi" }] }),
      chat({ model: "chat" }),
      chat({ model: "chat", messages: [] }, { "content-type": "application/json" }),
      fetch(server.url + "/v1/chat/completions", { method: "POST", headers: { ...auth, "content-length": String(1 << 30) }, body: "{}" }).catch(() => null),
      fetch(server.url + "/v1/chat/completions", { method: "POST", headers: auth, body: "{not json" }),
      fetch(server.url + "/no/such/route"),
      fetch(server.url + "/v1/models", { method: "DELETE", headers: auth }),
      fetch(server.url + "/v1/models", { method: "OPTIONS", headers: { origin: "http://example.test", "access-control-request-method": "GET" } }),
      fetch(server.url + "/healthz", { method: "HEAD" }),
    ]);
    for (const a of answers) await a?.arrayBuffer().catch(() => null);
    // a stream its client walks away from after the first chunk
    fake.behave({ delayBetweenChunksMs: 200 });
    const dropped = await chat({ model: "chat", messages: [{ role: "user", content: "hi" }], stream: true });
    const reader = dropped.body!.getReader();
    await reader.read();
    await reader.cancel();
    fake.behave({});
    expect(await server.deps.requestLog.idle(10_000)).toBe(true);
  } finally {
    await server.close();
  }
}, 60_000);

test("a response sent just before shutdown keeps its request line", async () => {
  const { server, lines } = await serverWithLines();
  let closed = false;
  try {
    const c = await server.newClient();
    const res = await fetch(server.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
    const id = res.headers.get("x-request-id");
    await res.json();
    await server.close();
    closed = true;
    expect(lines().filter((l) => l.msg === "request" && l.requestId === id).map((l) => ({ status: l.status, route: l.route }))).toEqual([{ status: 200, route: "/v1/chat/completions" }]);
  } finally {
    if (!closed) await server.close();
  }
}, 60_000);
