/**
 * LangChain's ChatOpenAI with `useResponsesApi: true` (it calls POST /v1/responses through the
 * openai SDK), configured as its docs show with only the base URL and key changed: invoke, stream
 * and a tool-calling round trip.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";
import { fakePromptTokens, replyText } from "../../../test/fakes/openai-upstream.ts";
import { cost, startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";

let t: BridgeServer;
beforeAll(async () => { t = await startBridgeServer(); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

async function chatModel(opts: { maxTokens?: number } = {}) {
  const c = await t.newClient(1_000_000);
  const model = new ChatOpenAI({ model: "chat-a", useResponsesApi: true, apiKey: c.key, configuration: { baseURL: c.baseURL }, maxRetries: 0, ...opts });
  return { c, model };
}

describe("LangChain ChatOpenAI({ useResponsesApi: true })", () => {
  test("invoke: the answer, its token usage, billed like chat on route /v1/responses", async () => {
    const { c, model } = await chatModel({ maxTokens: 5 });
    const msg = await model.invoke([new HumanMessage("Count slowly.")]);
    const sent = t.fake.requests[0]!.body;
    expect(sent.messages).toEqual([{ role: "user", content: "Count slowly." }]);
    expect(sent.max_tokens).toBe(5);
    const prompt = fakePromptTokens(sent.messages);
    expect(msg.text).toBe(replyText(5));
    expect(msg.usage_metadata).toMatchObject({ input_tokens: prompt, output_tokens: 5, total_tokens: prompt + 5 });
    expect(msg.response_metadata).toMatchObject({ model: "chat-a", status: "incomplete" });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", cost: cost(prompt, 5) });
  });

  test("stream: chunks as they arrive, usage on the last", async () => {
    const { c, model } = await chatModel();
    t.fake.behave({ tokens: 4 });
    let text = "";
    let chunks = 0;
    let usage: any;
    for await (const chunk of await model.stream("Count slowly.")) {
      text += chunk.text;
      if (chunk.text) chunks++;
      if (chunk.usage_metadata) usage = chunk.usage_metadata;
    }
    const prompt = fakePromptTokens(t.fake.requests[0]!.body.messages);
    expect([text, chunks]).toEqual([replyText(4), 4]);
    expect(usage).toMatchObject({ input_tokens: prompt, output_tokens: 4 });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", delivered_tokens: 4, cost: cost(prompt, 4) });
  });

  test("tools: a tool call, then the tool's result sent back with the conversation", async () => {
    const { model } = await chatModel();
    t.fake.behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
    const getWeather = tool(async ({ city }) => `sunny in ${city}`, { name: "get_weather", description: "Weather in a city", schema: z.object({ city: z.string() }) });
    const withTools = model.bindTools([getWeather]);
    const question = new HumanMessage("Weather in Paris?");
    const call = await withTools.invoke([question]);
    expect(call.tool_calls).toEqual([expect.objectContaining({ name: "get_weather", args: { city: "Paris" }, id: "call_fake0" })]);
    const result = await getWeather.invoke(call.tool_calls![0]!);
    expect(result).toBeInstanceOf(ToolMessage);
    const answer = await withTools.invoke([question, call, result]);
    expect(answer.text).toBe(replyText(16));
    expect(t.fake.requests[1]!.body.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_fake0", content: "sunny in Paris" },
    ]);
  });
});
