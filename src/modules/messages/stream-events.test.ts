/**
 * The Messages event stream is well-formed whatever chat chunks an upstream sends: fast-check
 * generates chunk sequences (text, reasoning under either field name, tool calls whose arguments
 * come in fragments — one after the other as OpenAI and vLLM send them, or interleaved — a
 * refusal, usage at the end, on the last chunk or missing, a stream that ends normally or breaks)
 * and every rewritten stream must
 * - follow the grammar: message_start first and once; content blocks with indices 0, 1, 2 …, one
 *   open at a time, each delta of its block's kind; message_delta (stop reason, usage as billed)
 *   then message_stop last — or an `error` event last when the stream broke;
 * - lose nothing: the text, the reasoning and every tool call's arguments arrive whole, in order;
 * - be accepted by the Anthropic SDK's own accumulator (MessageStream), which gives back the same
 *   content.
 */
import { describe, expect, test } from "bun:test";
import { MessageStream } from "@anthropic-ai/sdk/lib/MessageStream";
import fc from "fast-check";
import { MessagesStream } from "./stream-events.ts";

interface Script {
  /** one chat chunk per entry */
  chunks: any[];
  text: string;
  thinking: string;
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  finish: string | null;
  cached: number;
  broken: boolean;
}

const jsonObject = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 })), { maxKeys: 4 });

/** Split `s` into pieces at the given cut points (sorted, deduplicated, inside s). */
const cut = (s: string, at: number[]) => {
  const points = [...new Set(at.map((p) => p % (s.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of points) {
    if (p > from) out.push(s.slice(from, p));
    from = Math.max(from, p);
  }
  if (from < s.length) out.push(s.slice(from));
  return out.length ? out : [s];
};

const script: fc.Arbitrary<Script> = fc
  .record({
    text: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 6 }),
    reasoning: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 4 }),
    reasoningField: fc.constantFrom("reasoning_content", "reasoning"),
    refusal: fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: null }),
    calls: fc.array(fc.record({ input: jsonObject, cuts: fc.array(fc.nat(), { maxLength: 4 }), nameLater: fc.boolean(), withId: fc.boolean() }), { maxLength: 3 }),
    /** realistic: reasoning, then text, then each call whole; chaotic: everything interleaved */
    chaotic: fc.boolean(),
    order: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 40, maxLength: 40 }),
    finish: fc.constantFrom("stop", "length", "tool_calls", "content_filter", null),
    usage: fc.constantFrom("final chunk", "last chunk", "none"),
    cached: fc.nat({ max: 50 }),
    broken: fc.boolean(),
    group: fc.boolean(),
  })
  .map((g) => {
    type Op = { delta: Record<string, unknown>; key: number };
    const ops: Op[] = [];
    let k = 0;
    const key = (base: number) => (g.chaotic ? g.order[k++ % g.order.length]! : base + k++ / 1000);
    for (const r of g.reasoning) ops.push({ delta: { [g.reasoningField]: r }, key: key(0) });
    for (const s of g.text) ops.push({ delta: { content: s }, key: key(1) });
    if (g.refusal !== null) ops.push({ delta: { refusal: g.refusal }, key: key(2) });
    const calls = g.calls.map((c, i) => ({ id: c.withId ? `call_${i}` : "", name: `tool_${i}`, input: c.input }));
    g.calls.forEach((c, i) => {
      const pieces = cut(JSON.stringify(c.input), c.cuts);
      // the first fragment names the call (or only carries its id, the name coming next)
      const first = { index: i, ...(c.withId ? { id: `call_${i}`, type: "function" } : {}), function: c.nameLater ? { arguments: "" } : { name: `tool_${i}`, arguments: "" } };
      const frags: Array<Record<string, unknown>> = [first, ...(c.nameLater ? [{ index: i, function: { name: `tool_${i}` } }] : []), ...pieces.map((p) => ({ index: i, function: { arguments: p } }))];
      // a call's fragments keep their order: keys increase within the call
      let floor = 0;
      for (const f of frags) {
        const kk = g.chaotic ? Math.max(floor, key(0)) + 1e-9 : key(3 + i);
        floor = kk;
        ops.push({ delta: { tool_calls: [f] }, key: kk });
      }
    });
    ops.sort((a, b) => a.key - b.key);
    // sometimes two consecutive tool fragments share a chunk (parallel calls in one delta)
    const deltas: Array<Record<string, unknown>> = [];
    for (const op of ops) {
      const prev = deltas.at(-1);
      if (g.group && prev?.tool_calls && op.delta.tool_calls && (prev.tool_calls as any[]).every((t) => t.index !== (op.delta.tool_calls as any[])[0].index)) {
        (prev.tool_calls as any[]).push(...(op.delta.tool_calls as any[]));
      } else deltas.push({ ...op.delta });
    }
    const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, prompt_tokens_details: { cached_tokens: g.cached } };
    const chunks = deltas.map((delta) => ({ id: "c", object: "chat.completion.chunk", model: "chat-x", choices: [{ index: 0, delta, finish_reason: null }] }));
    if (!g.broken) {
      chunks.push({ id: "c", object: "chat.completion.chunk", model: "chat-x", choices: [{ index: 0, delta: {}, finish_reason: g.finish as null }], ...(g.usage === "last chunk" ? { usage } : {}) } as any);
      if (g.usage === "final chunk") chunks.push({ id: "c", object: "chat.completion.chunk", model: "chat-x", choices: [], usage } as any);
    }
    // what the client must receive: the text and the reasoning in the order the upstream sent them
    const text = ops.map((o) => (o.delta.content ?? o.delta.refusal ?? "") as string).join("");
    const thinking = ops.map((o) => (o.delta[g.reasoningField] ?? "") as string).join("");
    return { chunks, calls, finish: g.finish, cached: g.usage === "none" ? 0 : g.cached, broken: g.broken, text, thinking };
  });

interface Event { type: string; [k: string]: any }

function parse(sse: string): Event[] {
  const events: Event[] = [];
  for (const block of sse.split("\n\n")) {
    if (block === "") continue;
    const m = /^event: (\S+)\ndata: (.*)$/s.exec(block);
    if (!m) throw new Error(`not an SSE event: ${JSON.stringify(block)}`);
    const data = JSON.parse(m[2]!);
    if (data.type !== m[1]) throw new Error(`event ${m[1]} carries type ${data.type}`);
    events.push(data);
  }
  return events;
}

const DELTA_OF: Record<string, string[]> = { text: ["text_delta"], thinking: ["thinking_delta", "signature_delta"], tool_use: ["input_json_delta"] };

/** The grammar; returns the blocks as a client accumulates them. */
function checkGrammar(events: Event[], broken: boolean) {
  expect(events[0]?.type).toBe("message_start");
  expect(events.filter((e) => e.type === "message_start")).toHaveLength(1);
  const blocks: Array<{ type: string; text: string; json: string; id?: string; name?: string }> = [];
  let open: number | null = null;
  let ended = false;
  for (const [i, e] of events.entries()) {
    expect(ended).toBe(false); // nothing after message_stop / error
    switch (e.type) {
      case "message_start":
      case "ping":
        break;
      case "content_block_start":
        expect(open).toBeNull();
        expect(e.index).toBe(blocks.length);
        open = e.index;
        blocks.push({ type: e.content_block.type, text: "", json: "", id: e.content_block.id, name: e.content_block.name });
        break;
      case "content_block_delta": {
        expect(e.index).toBe(open!);
        const b = blocks[e.index]!;
        expect(DELTA_OF[b.type]).toContain(e.delta.type);
        b.text += e.delta.text ?? e.delta.thinking ?? "";
        b.json += e.delta.partial_json ?? "";
        break;
      }
      case "content_block_stop":
        expect(e.index).toBe(open!);
        open = null;
        break;
      case "message_delta":
        expect(open).toBeNull();
        expect(["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]).toContain(e.delta.stop_reason);
        expect(events[i + 1]?.type).toBe("message_stop");
        break;
      case "message_stop":
        expect(events[i - 1]?.type).toBe("message_delta");
        ended = true;
        break;
      case "error":
        expect(broken).toBe(true);
        ended = true;
        break;
      default:
        throw new Error(`unknown event ${e.type}`);
    }
  }
  expect(ended).toBe(true);
  expect(events.at(-1)!.type).toBe(broken ? "error" : "message_stop");
  return blocks;
}

/** The SDK's accumulator over these events (it throws on events out of grammar). */
async function sdkMessage(events: Event[]) {
  const lines = new TextEncoder().encode(events.map((e) => JSON.stringify(e)).join("\n") + "\n");
  const stream = MessageStream.fromReadableStream(new ReadableStream({ start: (c) => (c.enqueue(lines), c.close()) }));
  return stream.finalMessage();
}

const BILLED = { promptTokens: 100, completionTokens: 10, cachedTokens: 0, cacheWriteTokens: 0, cost: 0 };

describe("the Messages stream rewriter", () => {
  test("any chat chunk sequence → a well-formed Messages stream that loses nothing and the SDK accumulates", async () => {
    await fc.assert(
      fc.asyncProperty(script, async (s) => {
        const rewriter = new MessagesStream({ id: "msg_test", stopSequences: [] });
        // what the chat stream billed: the reads it reported (within the prompt), and some writes
        const read = Math.min(s.cached, 100);
        const billed = { ...BILLED, cachedTokens: read, cacheWriteTokens: Math.min(5, 100 - read) };
        let sse = s.chunks.map((c) => rewriter.chunk(c)).join("");
        sse += s.broken
          ? rewriter.failed({ message: "The model's upstream response broke off.", type: "upstream_error", param: null, code: "upstream_interrupted" }, billed)
          : rewriter.done(billed);
        const events = parse(sse);
        const blocks = checkGrammar(events, s.broken);

        expect(blocks.filter((b) => b.type === "text").map((b) => b.text).join("")).toBe(s.text);
        expect(blocks.filter((b) => b.type === "thinking").map((b) => b.text).join("")).toBe(s.thinking);
        const tools = blocks.filter((b) => b.type === "tool_use");
        expect(tools.map((b) => b.name)).toEqual(expect.arrayContaining(s.calls.map((c) => c.name)));
        expect(tools).toHaveLength(s.calls.length);
        for (const c of s.calls) {
          const b = tools.find((x) => x.name === c.name)!;
          expect(JSON.parse(b.json)).toEqual(c.input);
          if (c.id) expect(b.id).toBe(c.id);
          else expect(b.id).toMatch(/^toolu_/);
        }
        if (s.broken) {
          expect(events.at(-1)).toEqual({ type: "error", error: { type: "api_error", message: "The model's upstream response broke off." } });
          return;
        }
        const delta = events.at(-2)!;
        expect(delta.usage).toEqual({ input_tokens: 100 - read - billed.cacheWriteTokens, cache_read_input_tokens: read, cache_creation_input_tokens: billed.cacheWriteTokens, output_tokens: 10 });
        if (s.calls.length > 0 && (s.finish === "stop" || s.finish === "tool_calls" || s.finish === null) && !s.chunks.some((c) => c.choices?.[0]?.delta?.refusal)) expect(delta.delta.stop_reason).toBe("tool_use");

        const message = await sdkMessage(events);
        expect(message.model).toBe("chat-x");
        expect(message.usage).toMatchObject(delta.usage);
        expect(message.content.map((b) => b.type)).toEqual(blocks.map((b) => b.type) as never);
        message.content.forEach((b, i) => {
          if (b.type === "text") expect(b.text).toBe(blocks[i]!.text);
          if (b.type === "thinking") expect(b.thinking).toBe(blocks[i]!.text);
          if (b.type === "tool_use") expect(b.input).toEqual(JSON.parse(blocks[i]!.json));
        });
      }),
      { numRuns: 400, seed: Number(process.env.FC_SEED ?? 20261127) },
    );
  });

  test("stop reasons: a stop sequence the upstream names, a refusal, a length cut, tool calls", () => {
    const run = (choice: Record<string, unknown>, delta: Record<string, unknown> = { content: "x" }) => {
      const r = new MessagesStream({ id: "msg_t", stopSequences: ["END"] });
      const sse = r.chunk({ model: "m", choices: [{ index: 0, delta }] }) + r.chunk({ model: "m", choices: [{ index: 0, delta: {}, ...choice }] }) + r.done(BILLED);
      return parse(sse).at(-2)!.delta;
    };
    expect(run({ finish_reason: "stop", stop_reason: "END" })).toEqual({ stop_reason: "stop_sequence", stop_sequence: "END" });
    expect(run({ finish_reason: "stop", stop_reason: 128001 })).toEqual({ stop_reason: "end_turn", stop_sequence: null }); // a stop token, not a sequence
    expect(run({ finish_reason: "length" })).toEqual({ stop_reason: "max_tokens", stop_sequence: null });
    expect(run({ finish_reason: "content_filter" })).toEqual({ stop_reason: "refusal", stop_sequence: null });
    expect(run({ finish_reason: "stop" }, { refusal: "I can't help with that." })).toEqual({ stop_reason: "refusal", stop_sequence: null });
    expect(run({ finish_reason: "tool_calls" }, { tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{}" } }] })).toEqual({ stop_reason: "tool_use", stop_sequence: null });
  });
});
