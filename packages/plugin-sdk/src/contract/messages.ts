/**
 * The native Messages part of the contract (see index.ts), registered when the instance has a
 * `messages` capability: results and events the host accepts, a well-formed event grammar, usage
 * the host would bill, prompt aborts, and the failures' kinds as for chat.
 */
import { describe, expect, test } from "bun:test";
import { chatUsageOfMessages, type MessagesRequest, type MessagesStreamEvent } from "../anthropic-messages.ts";
import type { ModelInstance } from "../capabilities.ts";
import { problemWithMessagesEvent, problemWithMessagesResult, problemWithTokenCount, problemWithUsage } from "../checks.ts";
import { testCall } from "../testing.ts";
import { expectFailure, HTTP_EXPECTATIONS, sleep, thrownBy, withScenario } from "./failures.ts";
import type { ContractHarness } from "./index.ts";

const MAX_TOKENS = 8;

/**
 * What a client's Messages SDK relies on in a stream: `message_start` first and once, blocks opened
 * (`content_block_start`), filled (`content_block_delta`) and closed (`content_block_stop`) one at a
 * time with indices 0, 1, 2 …, a `message_delta`, then `message_stop` last. `ping` anywhere.
 * Returns the problem, or null.
 */
export function problemWithMessagesGrammar(events: ReadonlyArray<Pick<MessagesStreamEvent, "event" | "json">>): string | null {
  const names = events.map((e) => e.event).filter((n) => n !== "ping");
  if (names[0] !== "message_start") return `the first event is ${names[0] ?? "missing"}, not message_start`;
  if (names.filter((n) => n === "message_start").length !== 1) return "message_start is sent more than once";
  if (names.at(-1) !== "message_stop") return `the last event is ${names.at(-1)}, not message_stop`;
  if (!names.includes("message_delta")) return "no message_delta (stop reason and usage) before message_stop";
  let open: number | null = null;
  let next = 0;
  for (const e of events) {
    const index = (e.json as { index?: unknown }).index;
    switch (e.event) {
      case "content_block_start":
        if (open !== null) return `block ${String(index)} starts while block ${open} is open`;
        if (index !== next) return `block ${String(index)} starts where block ${next} was due (indices are contiguous from 0)`;
        open = next++;
        break;
      case "content_block_delta":
        if (index !== open) return `a delta for block ${String(index)} while ${open === null ? "no block" : `block ${open}`} is open`;
        break;
      case "content_block_stop":
        if (index !== open) return `block ${String(index)} stops while ${open === null ? "no block" : `block ${open}`} is open`;
        open = null;
        break;
      case "message_delta":
      case "message_stop":
        if (open !== null) return `${e.event} while block ${open} is still open`;
        break;
    }
  }
  return null;
}

export function messagesContract(h: ContractHarness): void {
  const body = (over: Partial<MessagesRequest> = {}): MessagesRequest => ({
    model: "contract",
    messages: [{ role: "user", content: "Say something." }],
    max_tokens: MAX_TOKENS,
    ...h.opts.messages?.body,
    ...over,
  });
  const messages = () => h.instance().messages!;
  const streams = () => typeof h.instance().messages?.stream === "function";
  const billable = (u: unknown, b: MessagesRequest) => problemWithUsage(chatUsageOfMessages(u), ["prompt_tokens", "completion_tokens"], { completion: b.max_tokens });
  const collect = async (b: MessagesRequest) => {
    const events: MessagesStreamEvent[] = [];
    for await (const e of await messages().stream!(b, testCall())) events.push(e);
    return events;
  };
  const firstEvent = async (instance: ModelInstance = h.instance()) => {
    const it = (await instance.messages!.stream!(body({ stream: true }), testCall()))[Symbol.asyncIterator]();
    try {
      return await it.next();
    } finally {
      await it.return?.();
    }
  };

  describe("messages (native Messages API)", () => {
    test("create(): a message the host accepts, billed from upstreamUsage", async () => {
      const b = body();
      const r = await messages().create(b, testCall({ anthropicVersion: "2023-06-01" }));
      expect(problemWithMessagesResult(r)).toBeNull();
      if (r.upstreamUsage === undefined) throw new Error("create() returned no upstreamUsage: reelay would bill its own count of an answer the upstream measured");
      const problem = billable(r.upstreamUsage, b);
      if (problem) throw new Error(`upstreamUsage would not be billed (${problem}); reelay would bill its own count and log an anomaly`);
    });

    test("stream(): events the host relays (event + data + json), in the Messages grammar, usage billable", async () => {
      if (!streams()) return; // reelay streams through chat
      const b = body({ stream: true });
      const events = await collect(b);
      for (const e of events) {
        expect(problemWithMessagesEvent(e)).toBeNull();
        expect(JSON.parse(e.data)).toEqual(e.json);
      }
      expect(problemWithMessagesGrammar(events)).toBeNull();
      const start = events.find((e) => e.event === "message_start")!.json as { message?: { usage?: Record<string, unknown> } };
      const delta = events.filter((e) => e.event === "message_delta").at(-1)!.json as { usage?: Record<string, unknown> };
      const problem = billable({ ...start.message?.usage, ...Object.fromEntries(Object.entries(delta.usage ?? {}).filter(([, v]) => v !== null)) }, b);
      if (problem) throw new Error(`the stream's usage (message_start + message_delta) would not be billed: ${problem}`);
    });

    test("countTokens(): an integer count", async () => {
      if (typeof messages().countTokens !== "function") return;
      const { max_tokens: _, ...b } = body();
      expect(problemWithTokenCount(await messages().countTokens!(b, testCall()))).toBeNull();
    });

    test("an aborted signal rejects", async () => {
      const c = new AbortController();
      c.abort(new Error("client went away"));
      expect(await messages().create(body(), testCall({ signal: c.signal })).then(() => "resolved", () => "rejected")).toBe("rejected");
    });

    test("stream(): aborting the call's signal mid-stream ends it promptly (and the upstream request with it)", async () => {
      if (!streams()) return;
      const f = h.opts.failures;
      const run = async () => {
        const controller = new AbortController();
        const it = (await messages().stream!(body({ stream: true, max_tokens: 64 }), testCall({ signal: controller.signal })))[Symbol.asyncIterator]();
        expect((await it.next()).done).toBe(false);
        controller.abort(new DOMException("client disconnected", "AbortError"));
        const t0 = performance.now();
        for (let n = 0; n < 10_000 && performance.now() - t0 < 2_000; n++) {
          const r = await it.next().catch(() => ({ done: true as const, value: undefined }));
          if (r.done) break;
        }
        expect(performance.now() - t0).toBeLessThan(2_000);
        if (f?.slowStream && f.sawAbort) {
          let seen = false;
          for (let i = 0; i < 40 && !(seen = await f.sawAbort()); i++) await sleep(50);
          expect({ upstreamSawTheAbort: seen }).toEqual({ upstreamSawTheAbort: true });
        }
      };
      if (f?.slowStream) await withScenario(f, f.slowStream, run);
      else await run();
    });

    const f = h.opts.failures;
    if (!f?.httpStatus) return;
    describe("failures: the kind each gives, as the client sees it", () => {
      for (const [status, want] of HTTP_EXPECTATIONS) {
        test(`upstream HTTP ${status} → client ${want.status}${want.retryable ? ", retried" : ""}`, async () => {
          await withScenario(f, () => f.httpStatus!(status), async () => {
            expectFailure(await thrownBy(() => messages().create(body(), testCall())), want, "messages.create()");
            if (streams()) expectFailure(await thrownBy(() => firstEvent()), want, "messages.stream() before its first event");
          });
        });
      }
      if (f.breakMidStream) {
        test("a stream that breaks after its first events → stream_interrupted, not retried", async () => {
          if (!streams()) return;
          await withScenario(f, f.breakMidStream!, async () => {
            let got = 0;
            const err = await thrownBy(async () => {
              for await (const _ of await messages().stream!(body({ stream: true, max_tokens: 64 }), testCall())) got++;
            });
            expect(got).toBeGreaterThan(0);
            expectFailure(err, { status: 502, retryable: false, kind: "stream_interrupted" }, "messages.stream() midway");
          });
        });
      }
    });
  });
}
