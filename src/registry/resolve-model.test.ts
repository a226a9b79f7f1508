/**
 * Which answer a client gets when the model it names cannot serve it: 403 for a missing scope,
 * 404 for an unknown or forbidden model, 400 model_not_supported for a model of the wrong kind —
 * seen through the official OpenAI SDK, on every model route.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

let fake: FakeOpenAI;
let dir = "";
let s: TestServer;
const IMG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex").toString("base64");

beforeAll(async () => {
  fake = await startFakeOpenAI();
  dir = mkdtempSync(join(tmpdir(), "reelay-resolve-"));
  const file = join(dir, "models.json");
  // built-ins kept (use-lite, preview-motion) beside two chat models
  writeFileSync(file, JSON.stringify({ models: ["chat-a", "chat-b"].map((id) => ({ id, plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1, outputPerMillion: 1 } })) }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
}, 60_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s?.close();
  await fake?.stop();
});

async function sdk(opts: { scopes?: string[]; models?: string[] } = {}) {
  const { key } = await s.newClient(opts);
  return { key, openai: new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 }) };
}
const failure = (p: Promise<unknown>) => p.then(() => { throw new Error("expected an error"); }, (e: InstanceType<typeof OpenAI.APIError>) => ({ status: e.status, code: e.code, param: e.param, message: (e.error as { message: string }).message }));
const submitVideo = (key: string, model: string) =>
  fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model, prompt: "x", image: IMG }) });

describe("a model of the wrong kind → 400 model_not_supported, saying what it is and what to use", () => {
  test("chat with an embeddings model", async () => {
    const { openai } = await sdk({ models: ["use-lite", "chat-a", "chat-b"] });
    expect(await failure(openai.chat.completions.create({ model: "use-lite", messages: [{ role: "user", content: "hi" }] }))).toEqual({
      status: 400,
      code: "model_not_supported",
      param: "model",
      message: "'use-lite' is an embeddings model and cannot serve chat completions. Chat models this key may use: chat-a, chat-b.",
    });
  });

  test("embeddings with a video model, and with a chat model", async () => {
    const { openai } = await sdk({ models: ["use-lite", "chat-a", "preview-motion"] });
    expect(await failure(openai.embeddings.create({ model: "preview-motion", input: "x" }))).toMatchObject({
      status: 400,
      code: "model_not_supported",
      message: "'preview-motion' is a video model and cannot serve embeddings. Embeddings models this key may use: use-lite.",
    });
    expect((await failure(openai.embeddings.create({ model: "chat-a", input: "x" }))).message).toStartWith("'chat-a' is a chat model and cannot serve embeddings.");
  });

  test("a video job with an embeddings model; the list honours the key's model list", async () => {
    const { key } = await sdk({ models: ["use-lite", "chat-a"] });
    const res = await submitVideo(key, "use-lite");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toEqual({
      type: "invalid_request_error",
      code: "model_not_supported",
      param: "model",
      message: "'use-lite' is an embeddings model and cannot serve video generations. This key may use no video model.",
    });
  });
});

describe("a key without the route's scope → 403 naming the scope", () => {
  test("chat with an embeddings-only key, whatever the model", async () => {
    const { openai } = await sdk({ scopes: ["embeddings"] });
    for (const model of ["chat-a", "use-lite"]) {
      const err = await openai.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect({ code: err.code, message: err.error.message }).toEqual({
        code: "insufficient_scope",
        message: "This API key lacks the 'chat' scope needed for chat completions (its scopes: embeddings). Ask the operator for a key with the 'chat' scope.",
      });
    }
  });

  test("embeddings and video with a chat-only key", async () => {
    const { key, openai } = await sdk({ scopes: ["chat"] });
    expect(await failure(openai.embeddings.create({ model: "use-lite", input: "x" }))).toMatchObject({ status: 403, code: "insufficient_scope" });
    const res = await submitVideo(key, "preview-motion");
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.message).toContain("lacks the 'video' scope");
  });
});

describe("unknown or forbidden models stay 404 model_not_found", () => {
  test("unknown model, a model outside the key's list, a model outside the key's scopes", async () => {
    const notFound = { status: 404, code: "model_not_found", param: "model" };
    const any = await sdk();
    expect(await failure(any.openai.chat.completions.create({ model: "no-such", messages: [{ role: "user", content: "hi" }] }))).toMatchObject(notFound);
    const listed = await sdk({ models: ["chat-a"] });
    expect(await failure(listed.openai.chat.completions.create({ model: "chat-b", messages: [{ role: "user", content: "hi" }] }))).toMatchObject(notFound);
    expect(await failure(listed.openai.chat.completions.create({ model: "use-lite", messages: [{ role: "user", content: "hi" }] }))).toMatchObject(notFound);
    const chatOnly = await sdk({ scopes: ["chat"] });
    expect(await failure(chatOnly.openai.chat.completions.create({ model: "use-lite", messages: [{ role: "user", content: "hi" }] }))).toMatchObject(notFound);
  });
});

test("/v1/models says what each model serves", async () => {
  const { openai } = await sdk();
  const models = new Map<string, unknown>();
  for await (const m of openai.models.list()) models.set(m.id, (m as unknown as { capabilities: string[] }).capabilities);
  expect(Object.fromEntries(models)).toMatchObject({ "chat-a": ["chat"], "chat-b": ["chat"], "use-lite": ["embeddings"], "preview-motion": ["video"] });
  expect(await openai.models.retrieve("use-lite")).toMatchObject({ id: "use-lite", object: "model", capabilities: ["embeddings"] });
});
