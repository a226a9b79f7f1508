/**
 * The fake Anthropic API against the official Anthropic SDK: if the SDK's own accumulator, error
 * classes and token counter accept it, the fake speaks the wire protocol the plugin will meet.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { createParser } from "eventsource-parser";
import { problemWithMessagesGrammar } from "@reelay/plugin-sdk/contract";
import { fakeInputTokens, replyText, startFakeAnthropic } from "./anthropic-upstream.ts";

const fake = await startFakeAnthropic();
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0 });
const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Say something." }];
const weather: Anthropic.Tool = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

/** The raw events of a streamed request, as the wire carries them. */
async function rawEvents(body: Record<string, unknown>): Promise<Array<{ event: string; json: any }>> {
  const res = await fetch(`${fake.url}/v1/messages`, { method: "POST", headers: { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01", "content-type": "application/json" }, body: JSON.stringify({ ...body, stream: true }) });
  const out: Array<{ event: string; json: any }> = [];
  const parser = createParser({ onEvent: (e) => out.push({ event: e.event!, json: JSON.parse(e.data) }) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) parser.feed(decoder.decode(chunk, { stream: true }));
  return out;
}

describe("fake Anthropic API", () => {
  test("messages.create: the counted words, Anthropic's usage, the headers it checks recorded", async () => {
    fake.behave({ cacheRead: 2, cacheWrite: 1 });
    const m = await client.messages.create({ model: "claude-fake", max_tokens: 5, messages });
    expect(m).toMatchObject({ type: "message", role: "assistant", model: "claude-fake", stop_reason: "max_tokens", content: [{ type: "text", text: replyText(5) }] });
    const prompt = fakeInputTokens({ messages });
    expect(m.usage).toMatchObject({ input_tokens: prompt - 3, cache_read_input_tokens: 2, cache_creation_input_tokens: 1, output_tokens: 5 });
    // the SDK 1.x sends its key as a bearer token (Claude Code sends x-api-key: rawEvents below does)
    expect(fake.requests[0]!.headers).toMatchObject({ authorization: `Bearer ${fake.apiKey}`, "anthropic-version": expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
  });

  test("messages.stream(): the SDK's accumulator rebuilds the same message; the grammar holds", async () => {
    fake.behave({ thinking: "Let me think.", text: "Four.", toolUse: [{ name: "get_weather", input: { city: "Paris" } }] });
    const body = { model: "claude-fake", max_tokens: 64, messages, tools: [weather] };
    const plain = await client.messages.create(body);
    const streamed = await client.messages.stream(body).finalMessage();
    const content = [
      { type: "thinking", thinking: "Let me think.", signature: plain.content[0]!.type === "thinking" ? plain.content[0]!.signature : "?" },
      { type: "text", text: "Four." },
      { type: "tool_use", name: "get_weather", input: { city: "Paris" } },
    ];
    for (const m of [plain, streamed]) {
      expect(m.content).toMatchObject(content);
      expect([m.stop_reason, m.usage]).toEqual(["tool_use", plain.usage]);
    }
    expect(problemWithMessagesGrammar(await rawEvents(body))).toBeNull();
  });

  test("stop sequences, refusals and count_tokens", async () => {
    const cut = await client.messages.create({ model: "claude-fake", max_tokens: 16, messages, stop_sequences: [" four"] });
    expect([cut.stop_reason, cut.stop_sequence, (cut.content[0] as Anthropic.TextBlock).text]).toEqual(["stop_sequence", " four", replyText(3)]);
    fake.behave({ text: "I can't help with that.", stopReason: "refusal" });
    expect((await client.messages.create({ model: "claude-fake", max_tokens: 16, messages })).stop_reason).toBe("refusal");
    expect(await client.messages.countTokens({ model: "claude-fake", messages, tools: [weather] })).toEqual({ input_tokens: fakeInputTokens({ messages, tools: [weather] }) });
  });

  test("what the real API refuses: missing max_tokens, a tool_result without its tool_use, an empty text block, a thinking budget over max_tokens", async () => {
    const bad = async (body: any) => (await client.messages.create(body).then(() => null, (e) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(await bad({ model: "claude-fake", messages })).toBeInstanceOf(Anthropic.BadRequestError);
    const orphan = await bad({ model: "claude-fake", max_tokens: 8, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "42" }] }] });
    expect(orphan.message).toContain("unexpected `tool_use_id`");
    expect((await bad({ model: "claude-fake", max_tokens: 8, messages: [{ role: "user", content: "" }] })).message).toContain("non-empty");
    expect((await bad({ model: "claude-fake", max_tokens: 2000, thinking: { type: "enabled", budget_tokens: 4000 }, messages })).message).toContain("budget_tokens");
  });

  test("failure modes arrive as the SDK's own error classes", async () => {
    const err = async (p: Promise<unknown>) => (await p.then(() => null, (e) => e)) as InstanceType<typeof Anthropic.APIError>;
    const wrongKey = new Anthropic({ apiKey: "sk-ant-wrong", baseURL: fake.url, maxRetries: 0 });
    expect(await err(wrongKey.messages.create({ model: "m", max_tokens: 8, messages }))).toBeInstanceOf(Anthropic.AuthenticationError);
    fake.behave({ status: 429, retryAfter: 7 });
    const limited = await err(client.messages.create({ model: "m", max_tokens: 8, messages }));
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.headers?.get("retry-after")).toBe("7");
    fake.behave({ status: 529 });
    const overloaded = await err(client.messages.create({ model: "m", max_tokens: 8, messages }));
    expect([overloaded.status, (overloaded.error as any)?.error?.type]).toEqual([529, "overloaded_error"]);
    fake.behave({ errorEventAfterDeltas: 2 });
    const midStream = await err(client.messages.stream({ model: "m", max_tokens: 8, messages }).finalMessage());
    expect((midStream.error as any)?.error?.type).toBe("overloaded_error");
    fake.behave({ resetAfterDeltas: 2 });
    expect(await err(client.messages.stream({ model: "m", max_tokens: 8, messages }).finalMessage())).toBeInstanceOf(Error);
    fake.behave({ resetBeforeAnswer: true });
    expect(await err(client.messages.create({ model: "m", max_tokens: 8, messages }))).toBeInstanceOf(Anthropic.APIConnectionError);
  });

  test("a slow first byte: the headers come at once, the first event later", async () => {
    fake.behave({ delayFirstByteMs: 300 });
    const res = await fetch(`${fake.url}/v1/messages?beta=true`, { method: "POST", headers: { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "m", max_tokens: 4, messages, stream: true }) });
    expect(res.status).toBe(200);
    expect(fake.requests[0]!.completed).toBe(false); // headers in hand, the answer not yet written
    expect(fake.requests[0]!.query).toBe("?beta=true");
    expect(await res.text()).toContain("event: message_stop");
  });
});
