/** The embeddings part of the contract (see index.ts). */
import { describe, expect, test } from "bun:test";
import { problemWithEmbeddings, problemWithUsage } from "../checks.ts";
import type { EmbeddingsRequest } from "../capabilities.ts";
import { testCall } from "../testing.ts";
import { expectFailure, HTTP_EXPECTATIONS, thrownBy, withScenario } from "./failures.ts";
import type { ContractHarness } from "./index.ts";

export function embeddingsContract(h: ContractHarness): void {
  const inputs = () => h.opts.embeddings?.inputs ?? ["first input", "a second, longer input", "third"];
  const request = (): EmbeddingsRequest => ({ body: { model: "contract", input: inputs() }, inputs: inputs() });
  const embed = (instance = h.instance()) => instance.embeddings!.embed(request(), testCall());

  describe("embeddings", () => {
    test("embed(): one vector per input, in order, and something to bill", async () => {
      const r = await embed();
      expect(problemWithEmbeddings(r, inputs().length)).toBeNull();
      expect([...r.data].sort((a, b) => a.index - b.index).map((d) => d.index)).toEqual(inputs().map((_, i) => i));
      if (r.usage) expect(r.usage.prompt_tokens).toBeGreaterThan(0);
      else if (r.upstreamUsage !== undefined) {
        const problem = problemWithUsage(r.upstreamUsage, ["prompt_tokens"]);
        if (problem) throw new Error(`upstreamUsage would not be billed (${problem}); reelay would bill its own count and log an anomaly`);
      }
      const cap = h.instance().embeddings!;
      if (cap.countTokens) {
        const counts = await cap.countTokens(inputs());
        expect(counts.length).toBe(inputs().length);
        for (const n of counts) expect(Number.isSafeInteger(n) && n > 0).toBe(true);
      }
    });

    const f = h.opts.failures;
    if (!f) return;
    describe("failures: the kind each gives, as the client sees it", () => {
      if (f.httpStatus) {
        for (const [status, want] of HTTP_EXPECTATIONS) {
          test(`upstream HTTP ${status} → client ${want.status}${want.retryable ? ", retried" : ""}`, async () => {
            await withScenario(f, () => f.httpStatus!(status), async () => expectFailure(await thrownBy(() => embed()), want, "embed()"));
          });
        }
      }
      if (f.unreachable) {
        test("upstream unreachable → connect, 502, retried", async () => {
          await withScenario(f, f.unreachable!, async () => expectFailure(await thrownBy(() => embed()), { status: 502, retryable: true, kind: "connect" }, "embed()"));
        });
      }
      if (f.hang && f.shortTimeouts) {
        test("upstream never answers → timeout, 504", async () => {
          const quick = await h.create(f.shortTimeouts);
          await withScenario(f, f.hang!, async () => expectFailure(await thrownBy(() => embed(quick)), { status: 504, retryable: true, kind: "timeout" }, "embed()"));
        });
      }
      if (f.garbage) {
        test("upstream answers garbage → malformed, 502, not retried", async () => {
          await withScenario(f, f.garbage!, async () => expectFailure(await thrownBy(() => embed()), { status: 502, retryable: false, kind: "malformed" }, "embed()"));
        });
      }
    });
  });
}
