/**
 * Model aliases (models file `aliases: [...]`): every route that takes a model accepts an alias —
 * chat, Responses, legacy completions, Messages, embeddings, video — calls the model's upstream,
 * and bills and records the model's id (chat, Messages, embeddings and video also answer with it);
 * GET /v1/models lists ids only; a key's model list may name either.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";

let fake: FakeOpenAI;
let s: TestServer;
const dir = mkdtempSync(join(tmpdir(), "reelay-aliases-"));
beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 3 });
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-x", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, aliases: ["gpt-4o-mini", "claude-haiku-4-5"] },
      { id: "embed-x", plugin: "openai-compatible", options: { baseUrl: fake.url, capabilities: ["embeddings"] }, pricing: { inputPerMillion: 1_000_000 }, aliases: ["text-embedding-3-small"] },
      { id: "preview-motion", plugin: "preview-video", pricing: { perSecond: 10_000 }, aliases: ["sora-2"] },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("each route takes an alias and bills and records the model's id", async () => {
  const { key } = await s.newClient({ credits: 10_000_000 });
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const chat = await post("/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  expect([chat.status, chat.body.model]).toEqual([200, "chat-x"]);
  const responses = await post("/v1/responses", { model: "gpt-4o-mini", input: "hi", store: false });
  expect(responses.status).toBe(200);
  const completions = await post("/v1/completions", { model: "claude-haiku-4-5", prompt: "hi" });
  expect(completions.status).toBe(200); // (Responses and legacy completions echo the name asked for, as they did before aliases)
  const messages = await post("/v1/messages", { model: "claude-haiku-4-5", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }, { "anthropic-version": "2023-06-01" });
  expect([messages.status, messages.body.model]).toEqual([200, "chat-x"]);
  const embeddings = await post("/v1/embeddings", { model: "text-embedding-3-small", input: "hi" });
  expect([embeddings.status, embeddings.body.model]).toEqual([200, "embed-x"]);
  const video = await post("/v1/videos/generations", { model: "sora-2", prompt: "pan", image: pngBase64(), seconds: 1 });
  expect([video.status, video.body.model]).toEqual([202, "preview-motion"]);
  // every upstream call named the model's upstream name, never the alias
  expect(fake.requests.map((r) => r.body.model)).toEqual(["chat-x", "chat-x", "chat-x", "chat-x", "embed-x"]);

  const usage = (await (await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] };
  expect(usage.data.map((u) => [u.route, u.model]).reverse()).toEqual([
    ["/v1/chat/completions", "chat-x"], ["/v1/responses", "chat-x"], ["/v1/completions", "chat-x"], ["/v1/messages", "chat-x"], ["/v1/embeddings", "embed-x"],
  ]);
  const models = (await (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] };
  expect(models.data.map((m) => m.id)).toEqual(["chat-x", "embed-x", "preview-motion"]);
  const one = (await (await fetch(`${s.url}/v1/models/sora-2`, { headers: { authorization: `Bearer ${key}` } })).json()) as { id: string };
  expect(one.id).toBe("preview-motion");
});

test("a key's model list may name a model by its id or an alias; either way the key may use all its names", async () => {
  for (const allowed of ["chat-x", "gpt-4o-mini"]) {
    const { key } = await s.newClient({ models: [allowed] });
    const ask = (model: string) => fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });
    expect([(await ask("claude-haiku-4-5")).status, (await ask("chat-x")).status, (await ask("text-embedding-3-small")).status]).toEqual([200, 200, 404]);
  }
});
