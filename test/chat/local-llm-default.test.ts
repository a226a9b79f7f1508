/**
 * With nothing configured (what `npm start` runs), chat answers from the embedded stories260K, and
 * /v1/models says what it is good for.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
beforeAll(async () => { s = await startTestServer(); }, 60_000);
afterAll(() => s.close());

test("the default models include stories260k, described as a children's-story writer, and it answers chat", async () => {
  const { key } = await s.newClient({ credits: 1_000_000 });
  const openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
  const model = (await openai.models.list()).data.find((m) => m.id === "stories260k") as OpenAI.Model & { description?: string };
  expect(model).toMatchObject({ object: "model", owned_by: "reelay" });
  expect(model.description).toContain("children's stories");
  expect(model.description).toContain("modelPath");

  // loaded on its first request (unless preloaded), like every model; /readyz tells
  const state = async () => ((await (await fetch(s.url + "/readyz")).json()) as { models: Array<{ id: string; state: string }> }).models.find((m) => m.id === "stories260k")?.state;
  expect(await state()).toBe("unloaded");
  const r = await openai.chat.completions.create({ model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], temperature: 0 });
  expect(await state()).toBe("ready");
  expect(r.choices[0]!.message.content).toStartWith(", there was a little girl named Lily.");
  // no max_tokens: the answer is bounded by the declared maxOutputTokens (256) or ends by itself
  expect(r.usage!.completion_tokens).toBeLessThanOrEqual(256);
  // $0.01 / $0.02 per million tokens, rounded up once per request
  const acct = (await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${key}` } })).json()) as { balance: number };
  expect(acct.balance).toBe(1_000_000 - Math.ceil((r.usage!.prompt_tokens * 10_000 + r.usage!.completion_tokens * 20_000) / 1_000_000));
});
