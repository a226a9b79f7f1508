/**
 * The Vercel AI SDK's default OpenAI provider (`openai(modelId)` speaks the Responses API), used
 * exactly as its docs show with only the base URL and key changed: generateText, streamText, a tool
 * loop (generateText and streamText), and a multi-turn conversation, where the SDK sends the
 * previous assistant text back as an `item_reference` to the stored response.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool, type ModelMessage } from "ai";
import { z } from "zod";
import { fakePromptTokens, replyText } from "../../../test/fakes/openai-upstream.ts";
import { cost, startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";

let t: BridgeServer;
beforeAll(async () => { t = await startBridgeServer(); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

async function provider(credits = 1_000_000) {
  const c = await t.newClient(credits);
  return { c, openai: createOpenAI({ baseURL: c.baseURL, apiKey: c.key }) };
}

const weather = tool({
  description: "Weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, sky: "sunny" }),
});

describe("AI SDK openai(id): the Responses API", () => {
  test("generateText: text, usage and finish reason; billed like chat on route /v1/responses", async () => {
    const { c, openai } = await provider();
    t.fake.behave({ tokens: 4 });
    const r = await generateText({ model: openai("chat-a"), system: "Be brief.", prompt: "Count slowly.", maxOutputTokens: 10 });
    const sent = t.fake.requests[0]!.body;
    expect(sent.messages).toEqual([{ role: "system", content: "Be brief." }, { role: "user", content: "Count slowly." }]);
    expect(sent.max_tokens).toBe(10);
    const prompt = fakePromptTokens(sent.messages);
    expect(r.text).toBe(replyText(4));
    expect(r.finishReason).toBe("stop");
    expect(r.usage).toMatchObject({ inputTokens: prompt, outputTokens: 4, totalTokens: prompt + 4 });
    expect(r.response.id).toMatch(/^resp_/);
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", prompt_tokens: prompt, completion_tokens: 4, cost: cost(prompt, 4) });
    expect((await c.get("/v1/account")).balance).toBe(1_000_000 - cost(prompt, 4));
  });

  test("maxOutputTokens reached: finish reason length", async () => {
    const { openai } = await provider();
    const r = await generateText({ model: openai("chat-a"), prompt: "Count.", maxOutputTokens: 3 });
    expect([r.text, r.finishReason, r.usage.outputTokens]).toEqual([replyText(3), "length", 3]);
  });

  test("streamText: the text arrives in pieces; usage at the end", async () => {
    const { c, openai } = await provider();
    t.fake.behave({ tokens: 6 });
    const result = streamText({ model: openai("chat-a"), prompt: "Count slowly." });
    const pieces: string[] = [];
    for await (const piece of result.textStream) pieces.push(piece);
    expect(pieces.join("")).toBe(replyText(6));
    expect(pieces.length).toBe(6);
    const prompt = fakePromptTokens(t.fake.requests[0]!.body.messages);
    expect(await result.usage).toMatchObject({ inputTokens: prompt, outputTokens: 6 });
    expect(await result.finishReason).toBe("stop");
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", delivered_tokens: 6, cost: cost(prompt, 6) });
  });

  for (const mode of ["generateText", "streamText"] as const) {
    test(`${mode} with a tool: the SDK runs it and sends the result back; the upstream sees tool_calls and the tool message`, async () => {
      const { c, openai } = await provider();
      t.fake.behave({ toolCalls: [{ name: "weather", arguments: '{"city":"Paris"}' }] });
      const args = { model: openai("chat-a"), tools: { weather }, stopWhen: stepCountIs(3), prompt: "Weather in Paris?" };
      const r = mode === "generateText" ? await generateText(args) : streamText(args);
      expect(await r.text).toBe(replyText(16));
      const steps = await r.steps;
      expect(steps).toHaveLength(2);
      expect(steps[0]!.toolCalls).toEqual([expect.objectContaining({ toolName: "weather", input: { city: "Paris" } })]);
      expect(steps[0]!.toolResults).toEqual([expect.objectContaining({ output: { city: "Paris", sky: "sunny" } })]);
      expect(t.fake.requests).toHaveLength(2);
      expect(t.fake.requests[0]!.body.tools).toEqual([{ type: "function", function: expect.objectContaining({ name: "weather", parameters: expect.objectContaining({ properties: { city: { type: "string" } } }) }) }]);
      expect(t.fake.requests[1]!.body.messages).toEqual([
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_fake0", content: JSON.stringify({ city: "Paris", sky: "sunny" }) },
      ]);
      const usage = (await c.get("/v1/usage")).data;
      expect(usage.map((u: any) => u.route)).toEqual(["/v1/responses", "/v1/responses"]);
    });
  }

  test("a second turn: the SDK refers to its earlier answer by item_reference, reelay sends the stored text to the model", async () => {
    const { c, openai } = await provider();
    const messages: ModelMessage[] = [{ role: "user", content: "Count." }];
    const first = await generateText({ model: openai("chat-a"), messages, maxOutputTokens: 5 });
    messages.push(...first.response.messages, { role: "user", content: "Again." });
    const second = await generateText({ model: openai("chat-a"), messages, maxOutputTokens: 5 });
    expect(t.fake.requests[1]!.body.messages).toEqual([{ role: "user", content: "Count." }, { role: "assistant", content: replyText(5) }, { role: "user", content: "Again." }]);
    // the stored input of the second response holds the first one's output item itself: it came as a reference
    const items = (await c.get(`/v1/responses/${second.response.id}/input_items?order=asc`)).data;
    const stored = await c.get(`/v1/responses/${first.response.id}`);
    expect(items.map((i: any) => i.id)).toContain(stored.output[0].id);
  });
});
