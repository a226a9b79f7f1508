/** The SSE and NDJSON readers: events as the bytes arrive, and the right kind when they go wrong. */
import { describe, expect, test } from "bun:test";
import { isPluginError, readMessagesSse, readNdjson, readSse, type ChatStreamEvent, type PluginError } from "../src/index.ts";

const bytes = async function* (...parts: string[]) {
  for (const p of parts) yield new TextEncoder().encode(p);
};
async function all<T>(it: AsyncIterable<T>): Promise<{ items: T[]; error?: PluginError }> {
  const items: T[] = [];
  try {
    for await (const x of it) items.push(x);
    return { items };
  } catch (e) {
    expect(isPluginError(e)).toBe(true);
    return { items, error: e as PluginError };
  }
}

describe("readSse", () => {
  test("events split across chunks, with their JSON, ending at [DONE]", async () => {
    const { items, error } = await all(readSse(bytes('data: {"choices":[{"ind', 'ex":0}]}\n\n: comment\n\ndata: {"choices":[]}\n', "\ndata: [DONE]\n\n", "data: after\n\n")));
    expect(error).toBeUndefined();
    expect(items).toEqual([{ data: '{"choices":[{"index":0}]}', json: { choices: [{ index: 0 }] } }, { data: '{"choices":[]}', json: { choices: [] } }, { data: "[DONE]" }] as ChatStreamEvent[]);
  });

  test("a payload that is not a JSON object → malformed", async () => {
    expect((await all(readSse(bytes("data: hello\n\n")))).error?.kind).toBe("malformed");
    expect((await all(readSse(bytes("data: [1,2]\n\n")))).error?.kind).toBe("malformed");
  });

  test("the bytes end before [DONE]: stream_interrupted after events, malformed before any", async () => {
    const cut = await all(readSse(bytes('data: {"choices":[]}\n\n')));
    expect([cut.items.length, cut.error?.kind, cut.error?.retryable]).toEqual([1, "stream_interrupted", false]);
    expect((await all(readSse(bytes("")))).error?.kind).toBe("malformed");
  });

  test("an event over maxEventBytes → malformed, before it is buffered whole", async () => {
    expect((await all(readSse(bytes(`data: {"x":"${"a".repeat(5000)}`), { maxEventBytes: 1024 }))).error?.kind).toBe("malformed");
  });
});

describe("readMessagesSse", () => {
  test("named events split across chunks, with their JSON, ending at message_stop", async () => {
    const { items, error } = await all(readMessagesSse(bytes(
      'event: message_start\ndata: {"type":"message_start","mess', 'age":{"id":"msg_1"}}\n\n',
      'event: ping\ndata: {"type": "ping"}\n\n',
      'data: {"type":"message_delta","delta":{}}\n\n', // unnamed: its type names it
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      'event: ping\ndata: {"type":"ping"}\n\n',
    )));
    expect(error).toBeUndefined();
    expect(items.map((e) => e.event)).toEqual(["message_start", "ping", "message_delta", "message_stop"]);
    expect(items[0]).toEqual({ event: "message_start", data: '{"type":"message_start","message":{"id":"msg_1"}}', json: { type: "message_start", message: { id: "msg_1" } } });
  });

  test("an error event ends the stream (the caller decides what it means)", async () => {
    const { items, error } = await all(readMessagesSse(bytes('event: message_start\ndata: {"type":"message_start"}\n\nevent: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')));
    expect(error).toBeUndefined();
    expect(items.at(-1)!.json).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
  });

  test("the bytes end before message_stop: stream_interrupted after events, malformed before any; non-JSON is malformed", async () => {
    const cut = await all(readMessagesSse(bytes('event: message_start\ndata: {"type":"message_start"}\n\n')));
    expect([cut.items.length, cut.error?.kind]).toEqual([1, "stream_interrupted"]);
    expect((await all(readMessagesSse(bytes("")))).error?.kind).toBe("malformed");
    expect((await all(readMessagesSse(bytes("event: ping\ndata: ping\n\n")))).error?.kind).toBe("malformed");
  });
});

describe("readNdjson", () => {
  test("one value per line, lines split across chunks, blank lines skipped, a last line without newline read", async () => {
    const { items } = await all(readNdjson(bytes('{"a":1}\n{"b"', ':2}\n\n', '{"c":3}')));
    expect(items).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }]);
  });

  test("a line that is not JSON, or longer than maxLineBytes → malformed", async () => {
    expect((await all(readNdjson(bytes('{"a":1}\nnope\n')))).error?.kind).toBe("malformed");
    expect((await all(readNdjson(bytes("x".repeat(3000)), { maxLineBytes: 1024 }))).error?.kind).toBe("malformed");
  });
});
