/**
 * kill -9 mid-batch and restart, with the official `openai` SDK against a reelay child process:
 * after the restart every line is in the output exactly once and charged exactly once; the
 * upstream calls repeated are at most the lines that were under way (4 × REELAY_BATCH_CONCURRENCY ×
 * REELAY_BATCH_SHARE %: those in their upstream call and those waiting for their result's commit); the holds of the killed process's lines are swept, so `held` returns to 0.
 * And a graceful stop mid-batch (SIGTERM) and restart: the lines its stop interrupted get a cost-0
 * usage row of their own (`batch_line_interrupted`) and, when they run again, their charge.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { chatLine, fileLines, modelsFile, uploadBatchFile, waitForBatch } from "./batch-server.ts";

let fake: FakeOpenAI;
let databaseUrl: string;
let dir: string;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  databaseUrl = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), "reelay-batch-kill9-"));
});
afterAll(async () => {
  await fake.stop();
  await dropDatabase(databaseUrl);
  rmSync(dir, { recursive: true, force: true });
});

const LINES = 60;
const SLOTS = 4;

/**
 * A 60-line chat batch on a child server, stopped (`stop`) once `after` lines completed, then a new
 * server on the same database finishes it. Returns the new server, the key, the batch's usage rows
 * and the account once its holds are all given back (at most 30 s).
 */
async function stopMidBatch(o: { name: string; upstreamMs: number; after: number; stop: (c: ChildServer) => Promise<void>; thenUpstreamMs?: number }) {
  const env = {
    DATABASE_URL: databaseUrl, REELAY_DATA_DIR: join(dir, `data-${o.name}`), REELAY_MODELS_FILE: modelsFile(dir, fake.url), REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "1000",
    REELAY_BATCH_SLICE_LINES: "10", REELAY_BATCH_CONCURRENCY: String(SLOTS * 2), REELAY_BATCH_SHARE: "50", REELAY_HOLD_TTL_SECONDS: "2", REELAY_HOLD_SWEEP_MS: "200",
  };
  let child: ChildServer = await spawnServer(env);
  try {
    const acct = (await (await child.admin("/admin/accounts", { body: { name: o.name, credits: 100_000_000 } })).json()) as { id: string };
    const key = ((await (await child.admin(`/admin/accounts/${acct.id}/keys`, { body: { name: "k" } })).json()) as { key: string }).key;
    const client = (url: string) => new OpenAI({ apiKey: key, baseURL: url + "/v1", maxRetries: 0 });
    fake.behave({ tokens: 2, delayHeadersMs: o.upstreamMs });
    const f = await uploadBatchFile(client(child.url), Array.from({ length: LINES }, (_, i) => chatLine(i)));
    const b = await client(child.url).batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    for (;;) {
      if ((await client(child.url).batches.retrieve(b.id)).request_counts!.completed >= o.after) break;
      await Bun.sleep(20);
    }
    await o.stop(child);
    if (o.thenUpstreamMs !== undefined) fake.behave({ tokens: 2, delayHeadersMs: o.thenUpstreamMs });
    child = await spawnServer(env);
    const openai = client(child.url);
    const done = await waitForBatch(openai, b.id, undefined, 120_000);
    expect(done).toMatchObject({ status: "completed", request_counts: { total: LINES, completed: LINES, failed: 0 } });
    const out = await fileLines(openai, done.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(Array.from({ length: LINES }, (_, i) => `req-${i}`).sort());
    const rows = ((await (await fetch(`${child.url}/v1/usage?limit=500`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] }).data.filter((u) => u.route === "batch");
    const until = performance.now() + 30_000;
    let account: any;
    do {
      await Bun.sleep(200);
      account = await (await fetch(`${child.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } })).json();
    } while (account.held !== 0 && performance.now() < until);
    return { child, rows, account: account as { held: number; balance: number } };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

test("kill -9 mid-batch, restart: every line once in the output, charged once; upstream repeats bounded by the lines in flight", async () => {
  const { child, rows, account } = await stopMidBatch({ name: "k9", upstreamMs: 80, after: 12, stop: (c) => c.kill9() });
  try {
    // charged once per line: one usage row per (batch, custom_id), each with a cost
    expect(rows).toHaveLength(LINES);
    expect(new Set(rows.map((u) => u.ref)).size).toBe(LINES);
    expect(rows.every((u) => u.cost > 0)).toBe(true);
    // repeats: only lines under way at the kill (at most 4 × the slots: in their upstream call, or waiting for their result's commit) were sent twice
    const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions").length;
    expect(sent).toBeGreaterThanOrEqual(LINES);
    expect(sent - LINES).toBeLessThanOrEqual(4 * SLOTS);
    // the killed process's holds are swept: held back to 0, balance = start − the charges
    expect([account.held, account.balance]).toEqual([0, 100_000_000 - rows.reduce((n, u) => n + u.cost, 0)]);
  } finally {
    await child.stop();
  }
}, 180_000);

test("SIGTERM mid-batch, restart: the lines the stop interrupted are charged when they run again (their cost-0 row has a ref of its own)", async () => {
  // slow upstream answers: the stop finds lines in their upstream call
  const { child, rows, account } = await stopMidBatch({ name: "term", upstreamMs: 400, after: 8, stop: (c) => c.stop(), thenUpstreamMs: 20 });
  try {
    // (the usage API shows a row's status, not its error code: 499, nothing charged)
    const interrupted = rows.filter((u) => u.status === 499);
    const charged = rows.filter((u) => u.cost > 0);
    // the stop did interrupt lines (else this test proves nothing), each left a cost-0 row
    expect(interrupted.length).toBeGreaterThan(0);
    expect(interrupted.every((u) => u.cost === 0 && u.disconnected)).toBe(true);
    // every line charged once, the interrupted ones included
    expect({ charged: charged.length, refs: new Set(charged.map((u) => u.ref)).size, rows: rows.length }).toEqual({ charged: LINES, refs: LINES, rows: LINES + interrupted.length });
    expect([account.held, account.balance]).toEqual([0, 100_000_000 - charged.reduce((n, u) => n + u.cost, 0)]);
  } finally {
    await child.stop();
  }
}, 180_000);
