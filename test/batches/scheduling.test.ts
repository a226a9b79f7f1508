/**
 * The batch scheduler under pressure, as a client sees it through the official `openai` SDK:
 * cancel mid-batch (nothing charged after it took effect), two instances sharing one batch (no line
 * twice), expiry with a test clock (what was done is kept), and a 20,000-line file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { chatLine, embedLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "./batch-server.ts";

let fake: FakeOpenAI;
beforeAll(async () => { fake = await startFakeOpenAI(); });
afterAll(() => fake.stop());

const ids = (n: number, prefix = "req-") => Array.from({ length: n }, (_, i) => `${prefix}${i}`).sort();

describe("cancel", () => {
  test("cancel mid-batch: cancelling, then cancelled; lines done are kept and charged once, no line charged after the cancel took effect, the rest are batch_cancelled", async () => {
    const t = await startBatchServer({}, { fake });
    try {
      const c = await t.newClient();
      fake.reset();
      fake.behave({ tokens: 2, delayHeadersMs: 60 });
      const f = await uploadBatchFile(c.openai, Array.from({ length: 80 }, (_, i) => chatLine(i)));
      const b = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      for (;;) {
        const now = await c.openai.batches.retrieve(b.id);
        if (now.request_counts!.completed >= 5) break;
        await Bun.sleep(20);
      }
      const cancelling = await c.openai.batches.cancel(b.id);
      expect(cancelling.status).toBe("cancelling");
      expect(cancelling.cancelling_at).toBeGreaterThan(0);
      const done = await waitForBatch(c.openai, b.id);
      expect(done.status).toBe("cancelled");
      expect(done.cancelled_at).toBeGreaterThan(0);
      const out = await fileLines(c.openai, done.output_file_id);
      const errs = await fileLines(c.openai, done.error_file_id);
      expect([...out, ...errs].map((l) => l.custom_id).sort()).toEqual(ids(80));
      expect(out.length).toBeLessThan(80);
      expect(errs.filter((l) => l.error.code === "batch_cancelled").length).toBeGreaterThan(0);
      expect(done.request_counts).toEqual({ total: 80, completed: out.length, failed: errs.length });
      // charged: exactly the lines in the output file; every other usage row of the batch is a release (0)
      const rows = (await usageRows(c)).filter((u) => u.route === "batch");
      const charged = rows.filter((u) => u.cost > 0);
      expect(new Set(charged.map((u) => u.ref))).toEqual(new Set(out.map((l) => `${b.id}:${l.custom_id}`)));
      expect(charged).toHaveLength(out.length);
      const acct = await c.get("/v1/account");
      expect(acct.held).toBe(0);
      expect(acct.balance).toBe(100_000_000 - charged.reduce((n, u) => n + u.cost, 0));
      // nothing runs after the batch is final
      const seen = fake.requests.length;
      await Bun.sleep(300);
      expect(fake.requests.length).toBe(seen);
    } finally {
      await t.close();
    }
  }, 60_000);
});

describe("two instances", () => {
  test("two instances on one database share a batch: every line answered and charged once, none sent upstream twice", async () => {
    const a = await startBatchServer({}, { fake });
    const b = await startBatchServer({ DATABASE_URL: a.s.databaseUrl! }, { fake });
    try {
      fake.reset();
      fake.behave({ tokens: 2, delayHeadersMs: 10 });
      const c = await a.newClient();
      const f = await uploadBatchFile(c.openai, Array.from({ length: 200 }, (_, i) => chatLine(i)));
      const batch = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      const done = await waitForBatch(c.openai, batch.id, undefined, 120_000);
      if (done.request_counts!.failed > 0) console.log("error lines:", JSON.stringify(await fileLines(c.openai, done.error_file_id)));
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 200, completed: 200, failed: 0 } });
      const out = await fileLines(c.openai, done.output_file_id);
      expect(out.map((l) => l.custom_id).sort()).toEqual(ids(200));
      const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body.messages[0].content);
      expect(sent).toHaveLength(200);
      expect(new Set(sent).size).toBe(200);
      const rows = (await usageRows(c)).filter((u) => u.route === "batch");
      expect(rows).toHaveLength(200);
      expect(new Set(rows.map((u) => u.ref)).size).toBe(200);
      const acct = await c.get("/v1/account");
      expect([acct.held, acct.balance]).toEqual([0, 100_000_000 - rows.reduce((n, u) => n + u.cost, 0)]);
    } finally {
      await b.close();
      await a.close();
    }
  }, 180_000);

  test("an instance whose tick outlasts its slices' lease keeps them: the other sends none of its lines in flight upstream again", async () => {
    // A ticks every 5 s and leases for 1.5 s: the time between its ticks stands for a tick that
    // outlasts the lease (a large batch validated, files written); its lines take 4 s upstream, all
    // at once (20 places)
    const a = await startBatchServer({ REELAY_SCHEDULER_POLL_MS: "5000", REELAY_SCHEDULER_LEASE_MS: "1500", REELAY_BATCH_CONCURRENCY: "40" }, { fake });
    let b: BatchServer | undefined;
    try {
      fake.reset();
      fake.behave({ tokens: 2, delayHeadersMs: 4000 });
      const c = await a.newClient();
      const f = await uploadBatchFile(c.openai, Array.from({ length: 10 }, (_, i) => chatLine(i)));
      const batch = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      // A claimed the batch's one slice: its 10 lines are in their upstream call
      const end = performance.now() + 30_000;
      while (fake.requests.length < 10 && performance.now() < end) await Bun.sleep(20);
      expect(fake.requests).toHaveLength(10);
      // B polls every 50 ms: it takes over any slice whose lease lapses while A's lines are upstream
      b = await startBatchServer({ DATABASE_URL: a.s.databaseUrl!, REELAY_SCHEDULER_LEASE_MS: "1500" }, { fake });
      const done = await waitForBatch(c.openai, batch.id, undefined, 60_000);
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 10, completed: 10, failed: 0 } });
      const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body.messages[0].content);
      expect(sent.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `question ${i}`).sort());
      const charged = (await usageRows(c)).filter((u) => u.route === "batch" && u.cost > 0);
      expect(charged.map((u) => u.ref).sort()).toEqual(ids(10).map((id) => `${batch.id}:${id}`));
    } finally {
      await b?.close();
      await a.close();
    }
  }, 120_000);
});

describe("a lease that lapsed while its lines are upstream", () => {
  test("the instance running the slice claims it back and keeps its one runner: no line sent upstream twice", async () => {
    // renewals every 1 s (a third of the lease), ticks every 50 ms: the tick after the lapse claims the slice back first
    const t = await startBatchServer({ REELAY_SCHEDULER_LEASE_MS: "3000", REELAY_BATCH_CONCURRENCY: "40" }, { fake });
    try {
      fake.reset();
      fake.behave({ tokens: 2, delayHeadersMs: 2500 });
      const c = await t.newClient();
      const f = await uploadBatchFile(c.openai, Array.from({ length: 10 }, (_, i) => chatLine(i)));
      const batch = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      const end = performance.now() + 30_000;
      while (fake.requests.length < 10 && performance.now() < end) await Bun.sleep(20);
      expect(fake.requests).toHaveLength(10);
      // the lease runs out while the lines are upstream, as when the renewal is late (a stalled event loop)
      const sql = postgres(t.s.databaseUrl!, { max: 1, onnotice: () => {} });
      try {
        await sql`UPDATE batch_slices SET lease_expires_at = now() - interval '1 second' WHERE batch_id = ${batch.id}`;
      } finally {
        await sql.end();
      }
      const done = await waitForBatch(c.openai, batch.id, undefined, 60_000);
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 10, completed: 10, failed: 0 } });
      const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body.messages[0].content);
      expect(sent.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `question ${i}`).sort());
    } finally {
      await t.close();
    }
  }, 60_000);
});

describe("expiry", () => {
  test("a batch past its 24 h window (test clock) expires: lines done are kept, the rest are batch_expired; nothing runs after", async () => {
    let offset = 0;
    const t = await startBatchServer({}, { fake, clock: () => Date.now() + offset });
    try {
      fake.reset();
      fake.behave({ tokens: 2, delayHeadersMs: 60 });
      const c = await t.newClient();
      const f = await uploadBatchFile(c.openai, Array.from({ length: 80 }, (_, i) => chatLine(i)));
      const b = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      expect(b.expires_at! - b.created_at).toBe(86_400);
      for (;;) {
        if ((await c.openai.batches.retrieve(b.id)).request_counts!.completed >= 5) break;
        await Bun.sleep(20);
      }
      offset = 86_400_000 + 1_000;
      const done = await waitForBatch(c.openai, b.id);
      expect(done.status).toBe("expired");
      expect(done.expired_at).toBeGreaterThan(0);
      const out = await fileLines(c.openai, done.output_file_id);
      const errs = await fileLines(c.openai, done.error_file_id);
      expect(out.length).toBeGreaterThanOrEqual(5);
      expect([...out, ...errs].map((l) => l.custom_id).sort()).toEqual(ids(80));
      expect(errs.some((l) => l.error.code === "batch_expired" && l.response === null)).toBe(true);
      const charged = (await usageRows(c)).filter((u) => u.route === "batch" && u.cost > 0);
      expect(charged).toHaveLength(out.length);
      expect((await c.get("/v1/account")).held).toBe(0);
    } finally {
      await t.close();
    }
  }, 60_000);
});

describe("size", () => {
  test("a 20,000-line embeddings file: every line once in the output, one usage row each", async () => {
    // no requests-per-minute limit: with the default 600 a key's batches take 300 lines a minute (their share)
    const t = await startBatchServer({ REELAY_BATCH_SLICE_LINES: "500", REELAY_BATCH_CONCURRENCY: "64", REELAY_RATE_RPM: "0" }, { fake });
    try {
      fake.reset();
      const c = await t.newClient(1_000_000_000);
      const f = await uploadBatchFile(c.openai, Array.from({ length: 20_000 }, (_, i) => embedLine(i)));
      const b = await c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/embeddings", completion_window: "24h" });
      // ~870 lines/s on the 2-core box (23 s); the timeout leaves room for a heavily loaded one
      const done = await waitForBatch(c.openai, b.id, undefined, 1_500_000, 1_000);
      expect(done.status).toBe("completed");
      const out = await fileLines(c.openai, done.output_file_id);
      const errs = await fileLines(c.openai, done.error_file_id);
      if (errs.length > 0) console.log(`${errs.length} error lines, e.g.:`, JSON.stringify(errs.slice(0, 3)));
      // every line exactly once, in the output or the error file
      expect(out.length + errs.length).toBe(20_000);
      expect(new Set([...out, ...errs].map((l) => l.custom_id)).size).toBe(20_000);
      expect(done.request_counts).toEqual({ total: 20_000, completed: out.length, failed: errs.length });
      // charged once per answered line, nothing for the others; the money adds up
      const rows = (await usageRows(c)).filter((u) => u.route === "batch");
      const charged = rows.filter((u) => u.cost > 0);
      expect(new Set(charged.map((u) => u.ref))).toEqual(new Set(out.map((l) => `${b.id}:${l.custom_id}`)));
      expect(charged).toHaveLength(out.length);
      const acct = await c.get("/v1/account");
      expect([acct.held, acct.balance]).toEqual([0, 1_000_000_000 - charged.reduce((n, u) => n + u.cost, 0)]);
    } finally {
      await t.close();
    }
  }, 1_600_000);
});
