import { describe, expect, test } from "bun:test";
import { PluginError } from "../src/errors.ts";
import { routedCall } from "../src/routed-call.ts";
import { UpstreamRouter, type BreakerPolicy } from "../src/router.ts";

const POLICY: BreakerPolicy = { consecutiveFailures: 3, errorRate: 0.5, minRequests: 10, windowMs: 1000, cooldownMs: 500 };

function router(weights: number[], policy = POLICY, maxConcurrent?: number[]) {
  const clock = { now: 0 };
  const r = new UpstreamRouter(weights.map((weight, i) => ({ name: `d${i}`, weight, maxConcurrent: maxConcurrent?.[i], target: i })), policy, () => clock.now);
  return { r, clock };
}
const call = () => ({ signal: new AbortController().signal });

describe("UpstreamRouter", () => {
  test("sequential traffic follows the weights exactly", () => {
    const { r } = router([1, 2, 5]);
    const counts = [0, 0, 0];
    for (let i = 0; i < 800; i++) {
      const d = r.acquire()!;
      counts[d.target]!++;
      r.release(d, { ok: true, ms: 1 });
    }
    expect(counts).toEqual([100, 200, 500]);
  });

  test("concurrent traffic goes where fewer requests are outstanding per unit of weight; maxConcurrent is a hard bound", () => {
    const { r } = router([1, 1], POLICY, [2, 3]);
    const held = Array.from({ length: 5 }, () => r.acquire()!);
    expect(held.map((d) => d.target).sort()).toEqual([0, 0, 1, 1, 1]);
    expect(r.acquire()).toBeNull();
    r.release(held[0]!, { ok: true, ms: 1 });
    expect(r.acquire()!.target).toBe(held[0]!.target);
  });

  test("consecutive failures open the circuit; after the cooldown one probe; success closes it", () => {
    const { r, clock } = router([1, 1]);
    const d1 = r.deployments[1]!;
    for (let i = 0; i < 3; i++) r.release((d1.inFlight++, d1.requests++, d1), { ok: false, kind: "http_503", ms: 1 });
    expect(r.status()[1]).toMatchObject({ state: "open", opened: 1, errors: { http_503: 3 }, openForMs: 500 });
    for (let i = 0; i < 10; i++) {
      const d = r.acquire()!;
      expect(d.target).toBe(0);
      r.release(d, { ok: true, ms: 1 });
    }
    clock.now = 500;
    const probe = [r.acquire()!, r.acquire()!];
    expect(probe.map((d) => d.target).sort()).toEqual([0, 1]); // one probe to d1 …
    expect(r.status()[1]!.state).toBe("half_open");
    const again = r.acquire()!; // … and only one: the next goes to d0
    expect(again.target).toBe(0);
    r.release(probe.find((d) => d.target === 1)!, { ok: true, ms: 2 });
    expect(r.status()[1]!.state).toBe("closed");
  });

  test("a failed probe opens the circuit again; Retry-After opens it at once for that long", () => {
    const { r, clock } = router([1, 1]);
    const d0 = r.acquire()!;
    r.release(d0, { ok: false, kind: "http_429", ms: 1, retryAfterMs: 2000 });
    expect(r.status()[d0.target]).toMatchObject({ state: "open", openForMs: 2000 });
    clock.now = 1999;
    for (let i = 0; i < 5; i++) expect(r.acquire()!.target).not.toBe(d0.target);
    clock.now = 2000;
    let probe = r.acquire()!;
    while (probe.target !== d0.target) probe = r.acquire()!;
    r.release(probe, { ok: false, kind: "connect", ms: 1 });
    expect(r.status()[d0.target]).toMatchObject({ state: "open", opened: 2, openForMs: 500 });
  });

  test("an error rate over the window opens the circuit even without failures in a row", () => {
    const { r } = router([1], { ...POLICY, consecutiveFailures: 100 });
    const d = r.deployments[0]!;
    for (let i = 0; i < 10; i++) {
      r.acquire();
      r.release(d, i % 2 ? { ok: false, kind: "timeout", ms: 1 } : { ok: true, ms: 1 });
    }
    expect(r.status()[0]).toMatchObject({ state: "open", recentRequests: 10, recentErrorRate: 0.5 });
  });

  test("a client's 4xx does not count against the deployment", () => {
    const { r } = router([1]);
    for (let i = 0; i < 10; i++) r.release(r.acquire()!, { ok: false, kind: "http_400", ms: 1, countsAgainst: false });
    expect(r.status()[0]).toMatchObject({ state: "closed", errors: { http_400: 10 } });
  });

  test("successful attempts' latencies are kept in cumulative buckets (failures are not); a bound is inclusive", () => {
    const { r } = router([1]);
    for (const ms of [3, 5, 7, 40, 40, 900, 200_000]) r.release(r.acquire()!, { ok: true, ms });
    r.release(r.acquire()!, { ok: false, kind: "timeout", ms: 30_000 });
    const h = r.status()[0]!.latency!;
    const at = (le: number) => h.counts[h.le.indexOf(le)];
    expect({ "0.005": at(0.005), "0.01": at(0.01), "0.05": at(0.05), "1": at(1), "120": at(120), count: h.count }).toEqual({ "0.005": 2, "0.01": 3, "0.05": 5, "1": 6, "120": 6, count: 7 });
    expect(h.sumSeconds).toBeCloseTo(200.995, 6);
  });
});

describe("routedCall", () => {
  test("a retryable failure is tried on another deployment; the caller is told which served, after how many attempts", async () => {
    const { r } = router([1, 1]);
    let routed: unknown;
    const seen: number[] = [];
    const { value } = await routedCall(r, { ...call(), routed: (i) => (routed = i) }, async ({ deployment }) => {
      seen.push(deployment.target);
      if (seen.length === 1) throw new PluginError("connect", "refused");
      return "ok";
    });
    expect([value, new Set(seen).size, routed]).toEqual(["ok", 2, { deployment: `d${seen[1]}`, attempts: 2 }]);
  });

  test("a failure that is not retryable (a client 4xx, a broken stream) is thrown at once", async () => {
    const { r } = router([1, 1]);
    let attempts = 0;
    const err = await routedCall(r, call(), async () => {
      attempts++;
      throw new PluginError("upstream_http", "bad", { status: 400 });
    }).catch((e) => e);
    expect([err.status, attempts]).toEqual([400, 1]);
    expect(r.status().every((d) => d.state === "closed" && d.inFlight === 0)).toBe(true);
  });

  test("the budget bounds the attempts; none available → overloaded with Retry-After", async () => {
    const { r } = router([1, 1, 1, 1]);
    let attempts = 0;
    const err = await routedCall(r, call(), async () => {
      attempts++;
      throw new PluginError("upstream_http", "down", { status: 503 });
    }, { budget: { maxAttempts: 2, deadlineMs: 10_000 } }).catch((e) => e);
    expect([err.kind, err.status, attempts]).toEqual(["upstream_http", 503, 2]);

    const { r: full } = router([1], POLICY, [1]);
    full.acquire();
    const busy = await routedCall(full, call(), async () => "never").catch((e) => e);
    expect([busy.kind, busy.code, busy.retryAfterSeconds]).toEqual(["overloaded", "no_upstream_available", 1]);
  });
});
