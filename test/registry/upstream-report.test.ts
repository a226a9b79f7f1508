/**
 * What a plugin reports about its deployments is checked field by field before GET /admin/upstreams
 * and /metrics show it: an external plugin may be older (no histogram) or broken.
 */
import { expect, test } from "bun:test";
import { UpstreamRouter } from "../../src/plugin-sdk/index.ts";
import { upstreamReport } from "../../src/registry/upstream-report.ts";

const registryOf = (reports: Record<string, () => unknown[]>) =>
  ({ list: () => Object.entries(reports).map(([id, upstreams]) => ({ id, plugin: "p", instance: { upstreams } })) }) as never;

test("a router's report passes unchanged, histogram included", () => {
  const r = new UpstreamRouter([{ name: "a", weight: 2, target: 0 }]);
  for (const ms of [4, 30, 30]) r.release(r.acquire()!, { ok: true, ms });
  const [m] = upstreamReport(registryOf({ chat: () => r.status() }));
  expect(m!.deployments).toEqual(r.status());
  expect(m!.deployments[0]!.latency).toMatchObject({ count: 3, counts: [1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3] });
});

test("an older plugin without a histogram, or a broken one, shows the rest; nonsense is dropped, not exported", () => {
  const base = { name: "d", weight: 1, state: "closed", inFlight: 0, requests: 1, successes: 1, errors: {}, recentErrorRate: 0, recentRequests: 1, latencyMs: 3, openForMs: 0, opened: 0 };
  const broken = [
    { le: [0.1, 0.05], counts: [1, 1], count: 1, sumSeconds: 0.01 }, // bounds not ascending
    { le: [0.1, 1], counts: [2, 1], count: 2, sumSeconds: 0.01 }, // counts not cumulative
    { le: [0.1, 1], counts: [1, 3], count: 2, sumSeconds: 0.01 }, // a bucket above the count
    { le: [0.1], counts: [1, 1], count: 2, sumSeconds: 0.01 }, // lengths differ
    { le: [0.1], counts: [1.5], count: 2, sumSeconds: 0.01 },
    { le: [0.1], counts: [1], count: 2, sumSeconds: "x" },
    "not a histogram",
  ];
  const reports = upstreamReport(registryOf({ old: () => [base], ...Object.fromEntries(broken.map((latency, i) => [`b${i}`, () => [{ ...base, latency }]])) }));
  expect(reports.map((m) => [m.model, m.deployments[0]!.latencyMs, m.deployments[0]!.latency])).toEqual([["old", 3, undefined], ...broken.map((_, i) => [`b${i}`, 3, undefined])]);
});
