/** The chat part of the contract (see index.ts). */
import { describe, expect, test } from "bun:test";
import type { ChatStreamEvent, ModelInstance } from "../capabilities.ts";
import { problemWithChatResult, problemWithStreamEvent, problemWithUsage, type UsageAllowance } from "../checks.ts";
import type { ChatCompletionChunk, ChatCompletionRequest } from "../openai-chat.ts";
import { testCall } from "../testing.ts";
import { expectFailure, HTTP_EXPECTATIONS, sleep, thrownBy, withScenario } from "./failures.ts";
import type { ContractHarness } from "./index.ts";

const MAX_TOKENS = 8;

export function chatContract(h: ContractHarness): void {
  const body = (over: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
    model: "contract",
    messages: [{ role: "user", content: "Say something." }],
    max_tokens: MAX_TOKENS,
    ...h.opts.chat?.body,
    ...over,
  });
  const allowance = (b: ChatCompletionRequest): UsageAllowance => ({ completion: (b.max_completion_tokens ?? b.max_tokens ?? Infinity) * (b.n ?? 1) });
  const chat = () => h.instance().chat!;
  const streams = () => typeof h.instance().chat?.stream === "function";
  const collect = async (b: ChatCompletionRequest, instance: ModelInstance = h.instance()) => {
    const events: ChatStreamEvent[] = [];
    for await (const e of await instance.chat!.stream!(b, testCall())) events.push(e);
    return events;
  };
  /** the first event of a stream, or what it rejects with before it */
  const firstEvent = async (instance: ModelInstance = h.instance()) => {
    const it = (await instance.chat!.stream!(body({ stream: true }), testCall()))[Symbol.asyncIterator]();
    try {
      return await it.next();
    } finally {
      await it.return?.();
    }
  };

  describe("chat", () => {
    test("complete(): a result the host accepts, billed from what it returns", async () => {
      const b = body();
      const r = await chat().complete(b, testCall());
      expect(problemWithChatResult(r, allowance(b))).toBeNull();
      if (r.usage === undefined && r.upstreamUsage === undefined && r.completion.usage) {
        throw new Error("completion.usage is not billed: return your counts as `usage` (or an upstream's report as `upstreamUsage`)");
      }
      if (r.usage) expect(r.usage.prompt_tokens).toBeGreaterThan(0);
      else if (r.upstreamUsage !== undefined) {
        const problem = problemWithUsage(r.upstreamUsage, ["prompt_tokens", "completion_tokens"], allowance(b));
        if (problem) throw new Error(`upstreamUsage would not be billed (${problem}); reelay would bill its own count and log an anomaly`);
      }
    });

    test("an aborted signal rejects", async () => {
      const c = new AbortController();
      c.abort(new Error("client went away"));
      expect(await chat().complete(body(), testCall({ signal: c.signal })).then(() => "resolved", () => "rejected")).toBe("rejected");
    });

    test("stream(): events the host relays (data + json), [DONE] last, the usage chunk rules", async () => {
      if (!streams()) return; // reelay answers stream: true from complete()
      const b = body({ stream: true });
      const events = await collect(b);
      for (const e of events) {
        expect(problemWithStreamEvent(e)).toBeNull();
        if (e.data !== "[DONE]") expect(JSON.parse(e.data)).toEqual(e.json);
      }
      expect(events.at(-1)?.data).toBe("[DONE]");
      expect(events.filter((e) => e.data === "[DONE]").length).toBe(1);
      const chunks = events.filter((e) => e.data !== "[DONE]").map((e) => e.json as ChatCompletionChunk);
      expect(chunks.some((c) => c.choices.length > 0)).toBe(true);
      // usage: at most one chunk with choices: [], the last one; running usage on content chunks only grows
      const finals = chunks.map((c, i) => [c, i] as const).filter(([c]) => c.choices.length === 0 && c.usage);
      expect({ usageChunks: finals.length <= 1, last: finals.every(([, i]) => i === chunks.length - 1) }).toEqual({ usageChunks: true, last: true });
      let running = 0;
      for (const c of chunks) {
        if (!c.usage) continue;
        expect(problemWithUsage(c.usage, ["prompt_tokens", "completion_tokens"], allowance(b))).toBeNull();
        expect(c.usage.completion_tokens).toBeGreaterThanOrEqual(running);
        running = c.usage.completion_tokens;
      }
      const counted = (await chat().complete(body(), testCall())).usage !== undefined;
      if (counted && !chunks.some((c) => c.usage)) throw new Error("complete() returns usage but the stream reports none: a streamed request would be billed on reelay's count, not yours");
    });

    test("stream(): aborting the call's signal mid-stream ends it promptly (and the upstream request with it)", async () => {
      if (!streams()) return;
      const f = h.opts.failures;
      const run = async () => {
        const controller = new AbortController();
        const it = (await chat().stream!(body({ stream: true, max_tokens: 64 }), testCall({ signal: controller.signal })))[Symbol.asyncIterator]();
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
    if (!f) return;
    describe("failures: the kind each gives, as the client sees it", () => {
      if (f.httpStatus) {
        for (const [status, want] of HTTP_EXPECTATIONS) {
          test(`upstream HTTP ${status} → client ${want.status}${want.retryable ? ", retried" : ""}`, async () => {
            await withScenario(f, () => f.httpStatus!(status), async () => {
              expectFailure(await thrownBy(() => chat().complete(body(), testCall())), want, "complete()");
              if (streams()) expectFailure(await thrownBy(() => firstEvent()), want, "stream() before its first event");
            });
          });
        }
      }
      if (f.unreachable) {
        test("upstream unreachable → connect, 502, retried", async () => {
          await withScenario(f, f.unreachable!, async () => {
            expectFailure(await thrownBy(() => chat().complete(body(), testCall())), { status: 502, retryable: true, kind: "connect" }, "complete()");
            if (streams()) expectFailure(await thrownBy(() => firstEvent()), { status: 502, retryable: true, kind: "connect" }, "stream()");
          });
        });
      }
      if (f.hang && f.shortTimeouts) {
        test("upstream never answers → timeout, 504", async () => {
          const quick = await h.create(f.shortTimeouts);
          await withScenario(f, f.hang!, async () => {
            expectFailure(await thrownBy(() => quick.chat!.complete(body(), testCall())), { status: 504, retryable: true, kind: "timeout" }, "complete()");
            if (typeof quick.chat?.stream === "function") expectFailure(await thrownBy(() => firstEvent(quick)), { status: 504, retryable: true, kind: "timeout" }, "stream()");
          });
        });
      }
      if (f.garbage) {
        test("upstream answers garbage → malformed, 502, not retried", async () => {
          await withScenario(f, f.garbage!, async () => {
            expectFailure(await thrownBy(() => chat().complete(body(), testCall())), { status: 502, retryable: false, kind: "malformed" }, "complete()");
          });
        });
      }
      if (f.breakMidStream) {
        test("a stream that breaks after its first events → stream_interrupted, not retried", async () => {
          if (!streams()) return;
          await withScenario(f, f.breakMidStream!, async () => {
            let got = 0;
            const err = await thrownBy(async () => {
              for await (const e of await chat().stream!(body({ stream: true, max_tokens: 64 }), testCall())) if (e.data !== "[DONE]") got++;
            });
            expect(got).toBeGreaterThan(0);
            expectFailure(err, { status: 502, retryable: false, kind: "stream_interrupted" }, "stream() midway");
          });
        });
      }
    });
  });
}
