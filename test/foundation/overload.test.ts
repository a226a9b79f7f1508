/**
 * Graceful overload: past a model's queue bound, requests get 503 model_overloaded with
 * Retry-After at once (not an unbounded wait), nothing is charged or held for them, and the
 * requests that were accepted complete.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import { startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "reelay-overload-"));
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [
      // one worker, tiny batches, room for ~60 tokens waiting (about 6 short sentences)
      { id: "tight-embed", plugin: "local-embeddings", pricing: { inputPerMillion: 1_000_000 }, options: { workers: 1, maxBatchSize: 2, maxQueuedTokens: 60, batchWindowMs: 0 } },
      { id: "tight-video", plugin: "preview-video", pricing: { perSecond: 1_000 }, options: { maxConcurrency: 1, maxQueued: 2 } },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: join(dir, "models.json"), REELAY_PRELOAD_MODELS: "tight-embed", REELAY_RATE_RPM: "0" });
  for (;;) {
    const ready = (await (await fetch(s.url + "/readyz")).json()) as { models: Array<{ id: string; state: string }> };
    if (ready.models.find((m) => m.id === "tight-embed")?.state === "ready") break;
    await Bun.sleep(100);
  }
}, 120_000);
afterAll(() => s?.close());

const json = (key: string, path: string, body: unknown) =>
  fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });

test("embeddings: past the queue bound, 503 model_overloaded with Retry-After; only the served requests are charged", async () => {
  const c = await s.newClient({ credits: 10_000_000 });
  const sentences = Array.from({ length: 40 }, (_, i) => `Overload sentence number ${i} about rivers.`);
  const results = await Promise.all(sentences.map(async (input) => {
    const res = await json(c.key, "/v1/embeddings", { model: "tight-embed", input });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as any };
  }));
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 503);
  expect(ok.length + refused.length).toBe(40);
  expect(ok.length).toBeGreaterThan(0);
  expect(refused.length).toBeGreaterThan(0);
  for (const r of refused) {
    expect(r.body.error).toMatchObject({ type: "service_unavailable", code: "model_overloaded" });
    expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
  }
  // Both views wait for this instance's queued settlements and read balance, holds and leases in one
  // snapshot (the admin view once read its lease separately: a lease given back in between showed as held).
  const charged = ok.reduce((n, r) => n + r.body.usage.prompt_tokens, 0); // 1 USD per million tokens: 1 micro-dollar each
  const client = (await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${c.key}` } })).json()) as { balance: number; held: number };
  const operator = (await (await s.admin(`/admin/accounts/${c.accountId}`)).json()) as { balance: number; held: number };
  for (const acct of [client, operator]) {
    expect(acct.held).toBe(0);
    expect(10_000_000 - acct.balance).toBe(charged);
  }
}, 60_000);

test("video: past the model's queued-jobs bound, submits get 503 model_overloaded with Retry-After and hold nothing", async () => {
  const c = await s.newClient({ credits: 10_000_000 });
  const image = Buffer.from(encodePng({ width: 32, height: 32, data: new Uint8Array(32 * 32 * 3).fill(90), channels: 3 })).toString("base64");
  const statuses: number[] = [];
  let refused: Response | null = null;
  for (let i = 0; i < 8; i++) {
    const res = await json(c.key, "/v1/videos/generations", { model: "tight-video", prompt: "zoom in", seconds: 10, size: "624x624", image });
    statuses.push(res.status);
    if (res.status === 503) refused ??= res;
  }
  expect(statuses.filter((x) => x === 202).length).toBeGreaterThanOrEqual(2);
  expect(refused).not.toBeNull();
  expect(((await refused!.json()) as any).error).toMatchObject({ type: "service_unavailable", code: "model_overloaded" });
  expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  const accepted = statuses.filter((x) => x === 202).length;
  const acct = (await (await s.admin(`/admin/accounts/${c.accountId}`)).json()) as { available: number };
  expect(10_000_000 - acct.available).toBe(accepted * 10 * 1_000); // held or charged: the accepted jobs only
}, 60_000);
