/**
 * A batch whose key is revoked while it runs: the lines that start after the revocation are not
 * run and fail with key_revoked (401) in the error file, uncharged; the lines done before are in the
 * output, charged once; the batch still completes (another key of the account can read it).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import postgres from "postgres";
import { chatLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "./batch-server.ts";

let t: BatchServer;
beforeAll(async () => { t = await startBatchServer(); }, 60_000);
afterAll(() => t.close());

test("lines of a batch whose key was revoked mid-batch fail with key_revoked and are not charged; the rest is charged once", async () => {
  const credits = 100_000_000;
  const c = await t.newClient(credits);
  // another key of the same account reads the batch after the first one is revoked
  const other = (await (await t.s.admin(`/admin/accounts/${c.accountId}/keys`, { body: { name: "reader" } })).json()) as { key: string };
  const reader = new OpenAI({ apiKey: other.key, baseURL: t.s.url + "/v1", maxRetries: 0 });
  t.fake.behave({ tokens: 2, delayHeadersMs: 300 });
  const total = 60;
  const file = await uploadBatchFile(c.openai, Array.from({ length: total }, (_, i) => chatLine(i)));
  const b = await c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  for (;;) {
    const now = await reader.batches.retrieve(b.id);
    if (now.request_counts!.completed > 0 || now.status === "completed") break;
    await Bun.sleep(20);
  }
  expect((await t.s.admin(`/admin/keys/${c.keyId}/revoke`, { method: "POST" })).status).toBe(200);
  expect((await fetch(t.s.url + "/v1/models", { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(401);

  const done = await waitForBatch(reader, b.id);
  expect(done.status).toBe("completed");
  const out = await fileLines(reader, done.output_file_id);
  const errors = await fileLines(reader, done.error_file_id);
  expect(done.request_counts).toEqual({ total, completed: out.length, failed: errors.length });
  expect(out.length).toBeGreaterThan(0);
  expect(errors.length).toBeGreaterThan(0);
  for (const e of errors) {
    expect(e).toMatchObject({ response: { status_code: 401, body: { error: { code: "key_revoked", type: "authentication_error" } } }, error: { code: "key_revoked" } });
  }
  expect(new Set([...out, ...errors].map((l) => l.custom_id)).size).toBe(total);

  // charged: exactly the output lines, once each; nothing held; ledger == balance
  const rows = (await usageRows({ ...c, get: async (p: string) => (await fetch(t.s.url + p, { headers: { authorization: `Bearer ${other.key}` } })).json() })).filter((u) => u.route === "batch");
  // (a line whose upstream call was in flight when the revocation took effect has a usage row of cost 0: its hold given back)
  const charged = rows.filter((u) => u.cost > 0);
  expect(charged.map((u) => u.ref).sort()).toEqual(out.map((l) => `${b.id}:${l.custom_id}`).sort());
  for (const u of rows.filter((u) => u.cost === 0)) expect(errors.map((l) => `${b.id}:${l.custom_id}`)).toContain(u.ref);
  // …and that row names its cause: the revoked key (401 key_revoked), not a cancelled batch
  const sql = postgres(t.s.databaseUrl!, { max: 1 });
  try {
    const free = await sql<{ status: number; error_code: string | null }[]>`SELECT status, error_code FROM usage_records WHERE route = 'batch' AND cost = 0`;
    expect(free.length).toBe(rows.filter((u) => u.cost === 0).length);
    expect(free.length).toBeGreaterThan(0);
    for (const r of free) expect(r).toEqual({ status: 401, error_code: "key_revoked" });
  } finally {
    await sql.end();
  }
  const acct = await (await fetch(t.s.url + "/v1/account", { headers: { authorization: `Bearer ${other.key}` } })).json();
  expect([acct.balance, acct.held]).toEqual([credits - rows.reduce((n, u) => n + u.cost, 0), 0]);
  // a line that had called the upstream when the revocation took effect is not charged either
  expect(t.fake.requests.filter((r) => r.path === "/v1/chat/completions").length).toBeGreaterThanOrEqual(out.length);
}, 120_000);
