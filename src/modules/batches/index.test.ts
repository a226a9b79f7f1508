/**
 * The Batch API with the official `openai` SDK over the fake upstream: files.create from a file
 * stream → batches.create → polling batches.retrieve → files.content, every custom_id matched;
 * chat, embeddings, Responses and legacy completions batches; the batch price on the usage rows;
 * invalid inputs of each kind (failed, errors naming the line); the upstream failing for some
 * lines (error file, nothing charged for them); credit running out mid-batch (insufficient_quota
 * lines, the batch still completes); list and cancel.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createReadStream, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fakeEmbedding, fakePromptTokens } from "../../../test/fakes/openai-upstream.ts";
import { chatLine, embedLine, fileLines, jsonl, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "../../../test/batches/batch-server.ts";

let t: BatchServer;
beforeAll(async () => { t = await startBatchServer(); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

/** live cost of a chat line: 3 µ$ per prompt token, 15 per output token (PRICING), rounded up */
const liveChatCost = (prompt: number, completion: number) => prompt * 3 + completion * 15;

describe("chat batch end to end", () => {
  test("every line answered once, in OpenAI's output format; each charged once at half price; usage rows say route batch and the batch id", async () => {
    const c = await t.newClient(100_000_000);
    t.fake.behave({ tokens: 3 });
    const path = join(t.dir, "chat.jsonl");
    writeFileSync(path, jsonl(Array.from({ length: 30 }, (_, i) => chatLine(i))));
    const file = await c.openai.files.create({ file: createReadStream(path), purpose: "batch" });
    const created = await c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { job: "nightly" } });
    expect(created).toMatchObject({ object: "batch", endpoint: "/v1/chat/completions", input_file_id: file.id, completion_window: "24h", status: "validating", metadata: { job: "nightly" }, errors: null, output_file_id: null });
    expect(created.id).toMatch(/^batch_/);
    const done = await waitForBatch(c.openai, created.id);
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 30, completed: 30, failed: 0 });
    expect(done.error_file_id).toBeNull();
    for (const k of ["in_progress_at", "finalizing_at", "completed_at"] as const) expect(done[k]).toBeGreaterThanOrEqual(created.created_at);

    const out = await fileLines(c.openai, done.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `req-${i}`).sort());
    const prompt = fakePromptTokens([{ role: "user", content: "question 0" }]);
    for (const l of out) {
      expect(l.id).toMatch(/^batch_req_/);
      expect(l.error).toBeNull();
      expect(l.response.status_code).toBe(200);
      expect(l.response.request_id).toBe(`${created.id}:${l.custom_id}`);
      expect(l.response.body).toMatchObject({ object: "chat.completion", model: "chat-a", usage: { completion_tokens: 3 } });
    }
    expect(t.fake.requests.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(30);
    expect(t.fake.requests[0]!.body.model).toBe("up-a");

    const rows = (await usageRows(c)).filter((u) => u.route === "batch");
    expect(rows).toHaveLength(30);
    expect(new Set(rows.map((u) => u.ref))).toEqual(new Set(out.map((l) => `${created.id}:${l.custom_id}`)));
    const half = Math.ceil(liveChatCost(prompt, 3) / 2);
    for (const u of rows) expect(u).toMatchObject({ kind: "chat", status: 200, completion_tokens: 3, cost: Math.ceil(liveChatCost(u.prompt_tokens, 3) / 2) });
    const charged = rows.reduce((n, u) => n + u.cost, 0);
    expect(charged).toBeGreaterThanOrEqual(30 * half - 30);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([100_000_000 - charged, 0]);
  }, 60_000);

  test("a model's own batchPercent prices its lines", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 4 });
    const f = await uploadBatchFile(c.openai, [chatLine(0, "chat-c"), chatLine(1, "chat-c")]);
    const b = await waitForBatch(c.openai, (await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    expect(b.status).toBe("completed");
    for (const u of (await usageRows(c)).filter((r) => r.route === "batch")) expect(u.cost).toBe(Math.ceil((liveChatCost(u.prompt_tokens, 4) * 20) / 100));
  }, 60_000);
});

describe("other endpoints", () => {
  test("embeddings batch: vectors of every line, billed once each at half price", async () => {
    const c = await t.newClient(10_000_000);
    const f = await uploadBatchFile(c.openai, Array.from({ length: 25 }, (_, i) => embedLine(i)));
    const b = await waitForBatch(c.openai, (await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/embeddings", completion_window: "24h" })).id);
    expect(b).toMatchObject({ status: "completed", request_counts: { total: 25, completed: 25, failed: 0 } });
    const out = await fileLines(c.openai, b.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 25 }, (_, i) => `emb-${i}`).sort());
    for (const l of out) {
      const i = Number(l.custom_id.slice(4));
      expect(l.response.body.object).toBe("list");
      expect(l.response.body.data[0].embedding).toEqual(Array.from(fakeEmbedding(`emb\u0000text number ${i}`, 8)));
    }
    const rows = (await usageRows(c)).filter((u) => u.route === "batch");
    expect(rows).toHaveLength(25);
    for (const u of rows) expect(u).toMatchObject({ kind: "embeddings", cost: Math.ceil(u.prompt_tokens / 2) });
  }, 60_000);

  test("Responses and legacy completions batches answer in their own shapes", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 2 });
    const rf = await uploadBatchFile(c.openai, [0, 1, 2].map((i) => ({ custom_id: `r${i}`, method: "POST", url: "/v1/responses", body: { model: "chat-a", input: `hi ${i}`, max_output_tokens: 16 } })));
    const cf = await uploadBatchFile(c.openai, [0, 1].map((i) => ({ custom_id: `c${i}`, method: "POST", url: "/v1/completions", body: { model: "chat-a", prompt: `once ${i}`, max_tokens: 4 } })));
    const rb = await c.openai.batches.create({ input_file_id: rf.id, endpoint: "/v1/responses", completion_window: "24h" });
    const cb = await c.openai.batches.create({ input_file_id: cf.id, endpoint: "/v1/completions", completion_window: "24h" });
    const r = await fileLines(c.openai, (await waitForBatch(c.openai, rb.id)).output_file_id);
    expect(r.map((l) => [l.custom_id, l.response.body.object, l.response.body.status]).sort()).toEqual([["r0", "response", "completed"], ["r1", "response", "completed"], ["r2", "response", "completed"]]);
    const cl = await fileLines(c.openai, (await waitForBatch(c.openai, cb.id)).output_file_id);
    expect(cl.map((l) => [l.custom_id, l.response.body.object]).sort()).toEqual([["c0", "text_completion"], ["c1", "text_completion"]]);
    expect((await usageRows(c)).filter((u) => u.route === "batch")).toHaveLength(5);
  }, 60_000);
});

describe("invalid input: the batch fails with errors naming the line", () => {
  const cases: Array<[string, unknown[], string, number]> = [
    ["a line that is not JSON", [chatLine(0), "{not json", chatLine(2)], "invalid_json_line", 2],
    ["a custom_id used twice", [chatLine(0), chatLine(1), { ...chatLine(2), custom_id: "req-0" }], "duplicate_custom_id", 3],
    ["a url other than the batch's endpoint", [chatLine(0), { ...embedLine(1) }], "invalid_url", 2],
    ["a model the key may not use", [chatLine(0), chatLine(1), chatLine(2, "chat-c")], "model_not_found", 3],
  ];
  for (const [what, lines, code, line] of cases) {
    test(what, async () => {
      const c = await t.newClient(10_000_000, { models: ["chat-a", "emb"] });
      const f = await uploadBatchFile(c.openai, lines);
      const b = await waitForBatch(c.openai, (await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
      expect(b.status).toBe("failed");
      expect(b.failed_at).toBeGreaterThan(0);
      expect(b.errors!.data).toHaveLength(1);
      expect(b.errors?.data?.[0]).toMatchObject({ code, line });
      expect(b.errors?.data?.[0]?.message).toContain(`Line ${line}`);
      expect(t.fake.requests).toHaveLength(0);
      expect((await usageRows(c)).length).toBe(0);
    }, 30_000);
  }

  test("refused at create: unknown file, a file not for batches, an endpoint or window it does not take", async () => {
    const c = await t.newClient();
    const e1 = await c.openai.batches.create({ input_file_id: "file-nope", endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e) => e);
    expect([e1.status, e1.error.code]).toEqual([404, "file_not_found"]);
    const other = await c.openai.files.create({ file: new File(["x"], "x.txt"), purpose: "user_data" });
    const e2 = await c.openai.batches.create({ input_file_id: other.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e) => e);
    expect([e2.status, e2.error.code]).toEqual([400, "invalid_file"]);
    const f = await uploadBatchFile(c.openai, [chatLine(0)]);
    const e3 = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/images" as any, completion_window: "24h" }).catch((e) => e);
    expect([e3.status, e3.error.param]).toEqual([400, "endpoint"]);
    const e4 = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "1h" as any }).catch((e) => e);
    expect([e4.status, e4.error.param]).toEqual([400, "completion_window"]);
    const d = await t.newClient();
    const e5 = await d.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e) => e);
    expect(e5.status).toBe(404);
  });
});

describe("failures and money", () => {
  test("the upstream failing for some lines: they are in the error file, nothing charged for them", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 2, failWhen: { lastMessageIncludes: "question 1", status: 400 } }); // question 1, 10..19
    const f = await uploadBatchFile(c.openai, Array.from({ length: 20 }, (_, i) => chatLine(i)));
    const b = await waitForBatch(c.openai, (await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    expect(b).toMatchObject({ status: "completed", request_counts: { total: 20, completed: 9, failed: 11 } });
    const out = await fileLines(c.openai, b.output_file_id);
    const errs = await fileLines(c.openai, b.error_file_id);
    expect(errs.map((l) => l.custom_id).sort()).toEqual(["req-1", ...Array.from({ length: 10 }, (_, i) => `req-${10 + i}`)].sort());
    expect([...out, ...errs].map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `req-${i}`).sort());
    for (const l of errs) {
      expect(l.response.status_code).toBe(400);
      expect(l.response.body.error).toBeDefined();
      expect(l.error.code).toBeTruthy();
    }
    const rows = (await usageRows(c)).filter((u) => u.route === "batch");
    const failedRefs = new Set(errs.map((l) => `${b.id}:${l.custom_id}`));
    for (const u of rows) if (failedRefs.has(u.ref)) expect(u.cost).toBe(0);
    const acct = await c.get("/v1/account");
    expect(acct.held).toBe(0);
    expect(acct.balance).toBe(100_000_000 - rows.reduce((n, u) => n + u.cost, 0));
  }, 60_000);

  test("credit running out mid-batch: the rest fail with insufficient_quota, the batch still completes, the balance never goes below zero", async () => {
    // a line's worst case: ~10 prompt × 3 + 5 × 15 = ~105 live → ~53 at the batch price; 500 µ$ pays for a few lines only
    const c = await t.newClient(500);
    t.fake.behave({ tokens: 5 });
    const f = await uploadBatchFile(c.openai, Array.from({ length: 30 }, (_, i) => chatLine(i)));
    const b = await waitForBatch(c.openai, (await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    expect(b.status).toBe("completed");
    const out = await fileLines(c.openai, b.output_file_id);
    const errs = await fileLines(c.openai, b.error_file_id);
    expect(out.length).toBeGreaterThan(0);
    expect(errs.length).toBeGreaterThan(0);
    expect(out.length + errs.length).toBe(30);
    for (const l of errs) expect([l.response.status_code, l.error.code]).toEqual([402, "insufficient_quota"]);
    const acct = await c.get("/v1/account");
    expect(acct.held).toBe(0);
    expect(acct.balance).toBeGreaterThanOrEqual(0);
    const rows = (await usageRows(c)).filter((u) => u.route === "batch" && u.status === 200);
    expect(rows).toHaveLength(out.length);
    expect(acct.balance).toBe(500 - rows.reduce((n, u) => n + u.cost, 0));
  }, 60_000);
});

describe("list and cancel", () => {
  test("list: newest first with cursor pages; another account sees none; cancel of a finished batch is refused", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 1 });
    const f = await uploadBatchFile(c.openai, [chatLine(0)]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    const all: string[] = [];
    for await (const b of await c.openai.batches.list({ limit: 2 })) all.push(b.id);
    expect(all).toEqual([...ids].reverse());
    const d = await t.newClient();
    expect((await d.openai.batches.list()).data).toEqual([]);
    expect((await d.openai.batches.retrieve(ids[0]!).catch((e) => e)).status).toBe(404);
    expect((await d.openai.batches.cancel(ids[0]!).catch((e) => e)).status).toBe(404);
    const done = await waitForBatch(c.openai, ids[0]!);
    expect(done.status).toBe("completed");
    const e = await c.openai.batches.cancel(ids[0]!).catch((x) => x);
    expect([e.status, e.error.code]).toEqual([400, "batch_not_cancellable"]);
  }, 60_000);
});
