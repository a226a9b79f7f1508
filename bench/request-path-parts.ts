/**
 * The request-path parts issue 32 changed, old way against new way, in one process (interleaved
 * rounds, median CPU time per call): `bun bench/request-path-parts.ts [rounds]`. End-to-end figures come
 * from chat-proxy.ts; on a shared, loaded machine its whole-request CPU swings by ±30 % between
 * runs, so each part's own cost is measured here, where the noise is the same for both ways.
 *  - metrics: one chat request's metric updates (upstream latency + credits + 2 token counters)
 *    with prom-client's Histogram/Counter vs the plain per-label-set counts (ops/plain-metrics.ts);
 *  - journal + batch encoding: a settlement stringified for the journal and again for its batch vs
 *    its batch entry made once (billing/settle-batch.ts's settlementEntry) and joined;
 *  - key hash: node:crypto createHash vs Bun.CryptoHasher.hash (SHA-256 hex).
 */
import { createHash } from "node:crypto";
import { Counter, Histogram, Registry } from "prom-client";
import { plainCounter, plainHistogram } from "../src/ops/plain-metrics.ts";
import { settlementEntry, type Settlement } from "../src/billing/settle-batch.ts";
import { usageJson } from "../src/usage/record-usage.ts";

const rounds = Number(process.argv[2] ?? 7);
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** CPU µs per call (this process's user + system time: on a busy machine wall time counts the other processes too) */
async function perCall(n: number, f: (i: number) => unknown): Promise<number> {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const r = f(i);
    if (r instanceof Promise) await r;
  }
  const d = process.cpuUsage(t);
  return (d.user + d.system) / n;
}

// metrics
const reg = new Registry();
const h = new Histogram({ name: "h", help: "h", labelNames: ["plugin", "model", "outcome"], buckets: BUCKETS, registers: [reg] });
const credits = new Counter({ name: "c", help: "c", labelNames: ["model", "kind"], registers: [reg] });
const tokens = new Counter({ name: "t", help: "t", labelNames: ["model", "kind", "type"], registers: [reg] });
const reg2 = new Registry();
const h2 = plainHistogram(reg2, "h", "h", ["plugin", "model", "outcome"], BUCKETS);
const credits2 = plainCounter(reg2, "c", "c", ["model", "kind"]);
const tokens2 = plainCounter(reg2, "t", "t", ["model", "kind", "type"]);
const metrics = (hh: typeof h2, cc: typeof credits2, tt: typeof tokens2) => (i: number) => {
  hh.observe({ plugin: "openai-compatible", model: "bench-chat", outcome: "ok" }, 0.002 + (i % 7) / 1000);
  cc.inc({ model: "bench-chat", kind: "chat" }, 5400);
  tt.inc({ model: "bench-chat", kind: "chat", type: "prompt" }, 12);
  tt.inc({ model: "bench-chat", kind: "chat", type: "completion" }, 6);
};

// journal + batch encoding of one settlement
const settlement: Settlement = {
  holdId: "hold_abcdefghijklmnopqrst", mode: "settle", actual: 5400, cover: 5400, reason: "chat bench-chat",
  usage: { accountId: "acct_abcdefghijklmnopqrst", keyId: "key_abcdefghijklmnopqrst", ref: "req_abcdefghijklmnop", kind: "chat", model: "bench-chat", plugin: "openai-compatible", promptTokens: 12, completionTokens: 6, cachedTokens: null, cacheWriteTokens: null, deliveredTokens: 6, reportedTokens: 6, tokenSource: "upstream", status: 200, disconnected: false, latencyMs: 3, errorCode: null, anomaly: null, route: "/v1/chat/completions", plan: null, pricing: '{"in":150000,"out":600000}' },
};
const oldEncoding = (i: number) => {
  const line = JSON.stringify(settlement) + "\n";
  const batch = JSON.stringify([{ ...usageJson(settlement.usage), i, h: settlement.holdId, m: settlement.mode, x: settlement.actual, c: Math.max(0, Math.min(settlement.cover, settlement.actual)), why: settlement.reason }]);
  return line.length + batch.length;
};
const newEncoding = (i: number) => {
  const entry = settlementEntry(settlement)!;
  const line = entry + "\n";
  const batch = `[{"i":${i},${entry.slice(1)}]`;
  return line.length + batch.length;
};

const key = "rl-" + "a1B2c3D4e5".repeat(4);
const parts: Array<[string, [(i: number) => unknown, (i: number) => unknown], number]> = [
  ["metrics, per request", [metrics(h as never, credits as never, tokens as never), metrics(h2, credits2, tokens2)], 100_000],
  ["journal line + batch entry, per settlement", [oldEncoding, newEncoding], 100_000],
  ["API key SHA-256, per request", [() => createHash("sha256").update(key).digest("hex"), () => Bun.CryptoHasher.hash("sha256", key, "hex")], 100_000],
];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`| part | before µs | after µs | saved µs |\n|---|---|---|---|`);
for (const [name, [before, after], n] of parts) {
  const a: number[] = [], b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    a.push(await perCall(n, before));
    b.push(await perCall(n, after));
  }
  const [ma, mb] = [median(a), median(b)];
  console.log(`| ${name} | ${ma.toFixed(2)} | ${mb.toFixed(2)} | ${(ma - mb).toFixed(2)} |`);
}
