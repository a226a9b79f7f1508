/**
 * A batch and its key's limits: batch lines count in their own share of the key's limits
 * (REELAY_BATCH_SHARE, here 50 %): a line larger than the share's token limit fails with
 * tokens_rate_limit_exceeded, lines over the share's rate wait for it (none fails), and the live
 * requests of the same key keep their whole limits while the batch runs, exactly as without it.
 * And a key's budget running out mid-batch (the group-committed holds' budget windows).
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { chatLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "./batch-server.ts";

let t: BatchServer;
beforeAll(async () => { t = await startBatchServer({ REELAY_BATCH_SHARE: "50" }); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const chat = (key: string, content: string) =>
  fetch(t.s.url + "/v1/chat/completions", {
    method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content }], max_tokens: 5 }),
  });

test("a line larger than the batches' share of the key's token limit fails with tokens_rate_limit_exceeded; the same request live is served", async () => {
  const c = await t.newClient(100_000_000, { limits: { tokens_per_minute: 400 } });
  t.fake.behave({ tokens: 2 });
  // ~300 tokens: over the batches' 200 (50 % of 400), under the key's 400
  const big = Array.from({ length: 140 }, (_, i) => `w${i}`).join(" ");
  const lines = [chatLine(0), { ...chatLine(1), body: { ...chatLine(1).body, messages: [{ role: "user", content: big }] } }];
  const file = await uploadBatchFile(c.openai, lines);
  const b = await c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const done = await waitForBatch(c.openai, b.id);
  expect(done.status).toBe("completed");
  expect(done.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
  expect((await fileLines(c.openai, done.output_file_id)).map((l) => l.custom_id)).toEqual(["req-0"]);
  const [err] = await fileLines(c.openai, done.error_file_id);
  expect(err).toMatchObject({ custom_id: "req-1", response: { status_code: 429 }, error: { code: "tokens_rate_limit_exceeded" } });
  expect(err.error.message).toContain("share, 50 %");
  expect(err.error.message).toContain("limit on tokens per minute (TPM)");
  expect(err.error.message).toContain("is 200");
  // nothing was held or charged for it
  const acct = await c.get("/v1/account");
  expect(acct.held).toBe(0);
  // live, the key has its whole limit
  const live = await chat(c.key, big);
  expect([live.status, live.status === 200 ? "" : await live.text()]).toEqual([200, ""]);
  expect(live.headers.get("x-ratelimit-limit-tokens")).toBe("400");
}, 60_000);

test("lines over the batches' share of the key's request rate wait for it (none fails); the key's live requests keep their whole limit while the batch runs", async () => {
  // 120 requests a minute: the batches get 60 (a burst of 60, then one a second); live keeps 120
  const c = await t.newClient(100_000_000, { limits: { requests_per_minute: 120 } });
  t.fake.behave({ tokens: 2 });
  const total = 64;
  let calls = 0; // the key's live requests so far
  // from before the first live request counted (the upload): the limit refills one every 500 ms from
  // that request on (t0 taken after the upload missed its time: CI saw 116 live successes for 115)
  const t0 = performance.now();
  const file = await uploadBatchFile(c.openai, Array.from({ length: total }, (_, i) => chatLine(i)));
  const b = await c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  calls += 2;
  for (let s = b.status; s === "validating"; calls++) {
    await Bun.sleep(20);
    s = (await c.openai.batches.retrieve(b.id)).status;
    if (s !== "validating") expect(s).toBe("in_progress");
  }

  // the live burst, during the batch: the key's 120 (minus the calls above, which count as live requests)
  const seen: Array<{ status: number; remaining: string | null }> = [];
  for (;;) {
    const r = await fetch(t.s.url + "/v1/models", { headers: { authorization: `Bearer ${c.key}` } });
    await r.arrayBuffer();
    seen.push({ status: r.status, remaining: r.headers.get("x-ratelimit-remaining-requests") });
    if (r.status !== 200) break;
  }
  const ok = seen.filter((s) => s.status === 200);
  // every live request until the key's own limit is reached succeeds, counting down to 0, then a 429:
  // the batch's lines took none of it
  // (a slow machine sees the limit refill during the burst: one more request per 500 ms elapsed)
  const refills = Math.floor((performance.now() - t0 + 2) / 500); // + 2 ms: the server's clock counts whole milliseconds
  expect(seen.at(-1)!.status).toBe(429);
  expect(ok.length).toBeGreaterThanOrEqual(120 - calls);
  expect(ok.length).toBeLessThanOrEqual(120 - calls + refills);
  ok.forEach((s, i) => expect(Number(s.remaining) - (120 - calls - i - 1)).toBeWithin(0, refills + 1));

  // the batch goes on, paced by its share, and completes with every line answered
  const until = performance.now() + 60_000;
  let done: any;
  for (;;) {
    const r = await fetch(`${t.s.url}/v1/batches/${b.id}`, { headers: { authorization: `Bearer ${c.key}` } }).catch(() => null);
    // our own polls are live requests: refused until the key's limit lets one through again
    if (r && r.status === 200) { done = await r.json(); if (done.status === "completed") break; }
    else await r?.arrayBuffer();
    if (performance.now() > until) throw new Error("batch did not complete");
    await Bun.sleep(500);
  }
  expect(done.request_counts).toEqual({ total, completed: total, failed: 0 });
  expect(t.fake.requests.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(total);
}, 120_000);

test("a key's budget running out mid-batch: the rest fail with budget_exceeded, the window never goes past its limit, nothing stays held", async () => {
  const credits = 100_000_000;
  const c = await t.newClient(credits);
  const limit = 400; // micro-dollars: a few lines' worth at the batch price
  expect((await t.s.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets: [{ period: "day", limit }] } })).status).toBe(200);
  t.fake.behave({ tokens: 2 });
  const total = 40;
  // from before the first live request counted (the upload): the limit refills one every 500 ms from
  // that request on (t0 taken after the upload missed its time: CI saw 116 live successes for 115)
  const t0 = performance.now();
  const file = await uploadBatchFile(c.openai, Array.from({ length: total }, (_, i) => chatLine(i)));
  const b = await c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const done = await waitForBatch(c.openai, b.id);
  expect(done.status).toBe("completed");
  const out = await fileLines(c.openai, done.output_file_id);
  const errors = await fileLines(c.openai, done.error_file_id);
  expect(out.length).toBeGreaterThan(0);
  expect(errors.length).toBeGreaterThan(0);
  expect(out.length + errors.length).toBe(total);
  for (const e of errors) expect(e).toMatchObject({ response: { status_code: 402 }, error: { code: "budget_exceeded" } });
  const charged = (await usageRows(c)).filter((u) => u.route === "batch" && u.cost > 0);
  expect(charged.map((u) => u.ref).sort()).toEqual(out.map((l) => `${b.id}:${l.custom_id}`).sort());
  const spent = charged.reduce((n, u) => n + u.cost, 0);
  expect(spent).toBeLessThanOrEqual(limit);
  const view = (await (await t.s.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any;
  expect(view.data[0].window).toMatchObject({ spent, reserved: 0 });
  const acct = await c.get("/v1/account");
  expect([acct.balance, acct.held]).toEqual([credits - spent, 0]);
}, 60_000);
