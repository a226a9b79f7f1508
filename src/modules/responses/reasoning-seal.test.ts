/**
 * `include: ["reasoning.encrypted_content"]` over a chat upstream that reasons (`reasoning_content`):
 * the reasoning item carries reelay's sealed blob, a client that keeps no state sends it back and
 * the model gets its reasoning again; nothing else is ever given back as reasoning. And where the
 * sealing key comes from.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type OpenAI from "openai";
import { startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";
import { reasoningSeal } from "./reasoning-seal.ts";

let t: BridgeServer;
beforeAll(async () => { t = await startBridgeServer({ REELAY_SECRET_KEY: "reasoning-test-operator-secret-0123456789" }); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const last = () => t.fake.requests.at(-1)!;
const INCLUDE = ["reasoning.encrypted_content" as const];
const weather = { type: "function" as const, name: "get_weather", strict: false, parameters: { type: "object", properties: { city: { type: "string" } } } };
const THOUGHT = "The user wants the weather; I will call get_weather for Paris.";

/** A first turn that reasons, then calls the tool; the stateless second turn's input. */
async function firstTurn(c: Awaited<ReturnType<BridgeServer["newClient"]>>, model = "chat-a") {
  t.fake.behave({ reasoning: THOUGHT, toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
  const r = await c.openai.responses.create({ model, input: "Weather in Paris?", tools: [weather], include: INCLUDE, store: false });
  t.fake.behave({ tokens: 3 });
  const next = [{ role: "user", content: "Weather in Paris?" }, ...r.output, { type: "function_call_output", call_id: "call_fake0", output: "sunny" }] as OpenAI.Responses.ResponseInput;
  return { r, next };
}
const assistantOf = (messages: any[]) => messages.find((m) => m.role === "assistant");

describe("include reasoning.encrypted_content", () => {
  test("the reasoning item carries an opaque blob (non-streamed and streamed), and only when included", async () => {
    const c = await t.newClient();
    const { r } = await firstTurn(c);
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    const item = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(item.content).toEqual([{ type: "reasoning_text", text: THOUGHT }]);
    expect(item.encrypted_content).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(item.encrypted_content).not.toContain("weather");

    t.fake.behave({ reasoning: THOUGHT, tokens: 2 });
    const stream = c.openai.responses.stream({ model: "chat-a", input: "Weather?", include: INCLUDE });
    const done: any[] = [];
    for await (const e of stream) if (e.type === "response.output_item.done") done.push(e.item);
    expect(done[0]).toMatchObject({ type: "reasoning", encrypted_content: expect.stringMatching(/^v1\./) });
    expect((await stream.finalResponse()).output[0]).toMatchObject({ type: "reasoning", encrypted_content: done[0].encrypted_content });
    // each seal is fresh (random IV), so two turns never share a blob
    expect(done[0].encrypted_content).not.toBe(item.encrypted_content);

    const plain = await c.openai.responses.create({ model: "chat-a", input: "Weather?" });
    expect(plain.output[0]!.type).toBe("reasoning");
    expect("encrypted_content" in plain.output[0]!).toBe(false);
  });

  test("sent back by a stateless client, the reasoning reaches the model on the assistant message it led to", async () => {
    const c = await t.newClient();
    const { next } = await firstTurn(c);
    await c.openai.responses.create({ model: "chat-a", input: next, tools: [weather], store: false });
    expect(last().body.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: null, reasoning_content: THOUGHT, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_fake0", content: "sunny" },
    ]);
  });

  test("an upstream that names it `reasoning` (vLLM ≥ 0.10, Ollama): a reasoning item too, and given back in that field", async () => {
    const c = await t.newClient();
    t.fake.behave({ reasoning: THOUGHT, reasoningField: "reasoning", toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
    const stream = c.openai.responses.stream({ model: "chat-a", input: "Weather in Paris?", tools: [weather], include: INCLUDE, store: false });
    let thought = "";
    for await (const e of stream) if (e.type === "response.reasoning_text.delta") thought += e.delta;
    expect(thought).toBe(THOUGHT);
    const r = await stream.finalResponse();
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    t.fake.behave({ tokens: 3 });
    await c.openai.responses.create({ model: "chat-a", tools: [weather], store: false, input: [{ role: "user", content: "Weather in Paris?" }, ...r.output, { type: "function_call_output", call_id: "call_fake0", output: "sunny" }] as OpenAI.Responses.ResponseInput });
    expect(assistantOf(last().body.messages)).toMatchObject({ reasoning: THOUGHT, tool_calls: [expect.anything()] });
    expect(assistantOf(last().body.messages).reasoning_content).toBeUndefined();
  });

  test("a stored conversation continued with previous_response_id gives the sealed reasoning back too", async () => {
    const c = await t.newClient();
    t.fake.behave({ reasoning: THOUGHT, reply: "Sunny." });
    const r = await c.openai.responses.create({ model: "chat-a", input: "Weather?", include: INCLUDE });
    await c.openai.responses.create({ model: "chat-a", input: "Thanks.", previous_response_id: r.id });
    expect(last().body.messages).toEqual([
      { role: "user", content: "Weather?" },
      { role: "assistant", content: "Sunny.", reasoning_content: THOUGHT },
      { role: "user", content: "Thanks." },
    ]);
  });

  test("never given back: reasoning text without reelay's seal, an altered blob, another account's, another model's — dropped, the request served", async () => {
    const a = await t.newClient();
    const b = await t.newClient();
    const { next } = await firstTurn(a);
    const reasoning = next[1] as OpenAI.Responses.ResponseReasoningItem;
    const sealed = reasoning.encrypted_content!;
    const parts = sealed.split(".");
    const altered = [...parts.slice(0, 3), (parts[3]![0] === "A" ? "B" : "A") + parts[3]!.slice(1), parts[4]].join(".");
    const cases: Array<[string, typeof a, string, Partial<OpenAI.Responses.ResponseReasoningItem>]> = [
      ["no seal, only text", a, "chat-a", { encrypted_content: undefined, content: [{ type: "reasoning_text", text: "forged thoughts" }] }],
      ["altered", a, "chat-a", { encrypted_content: altered }],
      ["another account's", b, "chat-a", {}],
      ["another model's", a, "chat-b", {}],
      ["not reelay's at all", a, "chat-a", { encrypted_content: "gAAAAABo-opaque-provider-blob" }],
    ];
    for (const [what, client, model, change] of cases) {
      const input = next.map((it, i) => (i === 1 ? { ...reasoning, ...change } : it)) as OpenAI.Responses.ResponseInput;
      const r = await client.openai.responses.create({ model, input, tools: [weather], store: false });
      expect({ what, status: r.status, reasoning: assistantOf(last().body.messages).reasoning_content }).toEqual({ what, status: "completed", reasoning: undefined });
    }
  });
});

describe("the sealing key", () => {
  const blob = { model: "m", text: "thinking", field: "reasoning" as const };

  test("REELAY_SECRET_KEY: instances sharing it open each other's blobs; another key or another account does not", () => {
    const config = { secretKey: "operator-secret-one-0123456789abcdef", databaseUrl: "postgres://x/y", dataDir: "/nonexistent" };
    const sealed = reasoningSeal(config).seal(blob, "acct_1");
    expect(reasoningSeal(config).open(sealed, "acct_1")).toEqual(blob);
    expect(reasoningSeal(config).open(sealed, "acct_2")).toBeNull();
    expect(reasoningSeal({ ...config, secretKey: "operator-secret-two-0123456789abcdef" }).open(sealed, "acct_1")).toBeNull();
  });

  test("embedded PGlite without REELAY_SECRET_KEY: the data directory's key, shared by every instance on it; PostgreSQL without one: a key per process", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "reelay-seal-"));
    try {
      const pglite = { secretKey: null, databaseUrl: null, dataDir };
      const sealed = reasoningSeal(pglite).seal(blob, "acct_1");
      expect(reasoningSeal(pglite).open(sealed, "acct_1")).toEqual(blob);
      const postgres = { secretKey: null, databaseUrl: "postgres://x/y", dataDir };
      const one = reasoningSeal(postgres);
      expect(one.open(one.seal(blob, "acct_1"), "acct_1")).toEqual(blob);
      expect(reasoningSeal(postgres).open(one.seal(blob, "acct_1"), "acct_1")).toBeNull();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
