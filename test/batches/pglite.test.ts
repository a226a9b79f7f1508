/**
 * Files and batches on the embedded database (PGlite, no DATABASE_URL): the same SDK round trip —
 * files.create, batches.create, polling, files.content — with every line answered and charged once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chatLine, embedLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "./batch-server.ts";

let t: BatchServer;
beforeAll(async () => { t = await startBatchServer({}, { pglite: true }); }, 120_000);
afterAll(() => t.close());

test("PGlite: a chat batch and an embeddings batch complete, every custom_id matched, one charge each", async () => {
  const c = await t.newClient();
  t.fake.behave({ tokens: 2 });
  const chat = await c.openai.batches.create({ input_file_id: (await uploadBatchFile(c.openai, Array.from({ length: 12 }, (_, i) => chatLine(i)))).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const emb = await c.openai.batches.create({ input_file_id: (await uploadBatchFile(c.openai, Array.from({ length: 12 }, (_, i) => embedLine(i)))).id, endpoint: "/v1/embeddings", completion_window: "24h" });
  const [a, b] = [await waitForBatch(c.openai, chat.id), await waitForBatch(c.openai, emb.id)];
  expect([a.status, b.status]).toEqual(["completed", "completed"]);
  for (const x of [a, b]) if (x.error_file_id) console.log("error lines:", JSON.stringify(await fileLines(c.openai, x.error_file_id)).slice(0, 1500));
  expect((await fileLines(c.openai, a.output_file_id)).map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `req-${i}`).sort());
  expect((await fileLines(c.openai, b.output_file_id)).map((l) => l.custom_id).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `emb-${i}`).sort());
  const rows = (await usageRows(c)).filter((u) => u.route === "batch");
  expect(rows).toHaveLength(24);
  const acct = await c.get("/v1/account");
  expect([acct.held, acct.balance]).toEqual([0, 100_000_000 - rows.reduce((n, u) => n + u.cost, 0)]);
}, 120_000);
