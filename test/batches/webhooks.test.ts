/**
 * Batch webhook events through the outbox, signed per Standard Webhooks: an endpoint that asks for
 * `batch.completed` / `batch.failed` / `batch.cancelled` gets each once, with the batch object as
 * `data`; one that did not ask gets none.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startReceiver, verified, type Receiver } from "../webhooks/receiver.ts";
import { chatLine, startBatchServer, uploadBatchFile, waitForBatch, type BatchServer } from "./batch-server.ts";

let t: BatchServer;
let receiver: Receiver;
beforeAll(async () => {
  receiver = startReceiver();
  t = await startBatchServer({
    REELAY_SECRET_KEY: "batch-webhook-secret-key-0123456789abcdef",
    REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    REELAY_WEBHOOK_POLL_MS: "100",
  });
}, 60_000);
afterAll(async () => {
  await t.close();
  await receiver.stop();
});

test("batch.completed, batch.failed and batch.cancelled reach an endpoint that asked for them, once each, signed, with the batch object", async () => {
  const c = await t.newClient();
  const headers = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
  const created = await (await fetch(t.s.url + "/v1/webhooks", { method: "POST", headers, body: JSON.stringify({ url: receiver.url + "/batches", events: ["batch.completed", "batch.failed", "batch.cancelled", "batch.expired"] }) })).json() as any;
  expect(created.events).toContain("batch.completed");
  const other = await (await fetch(t.s.url + "/v1/webhooks", { method: "POST", headers, body: JSON.stringify({ url: receiver.url + "/videos-only" }) })).json() as any;
  expect(other.events).not.toContain("batch.completed");

  t.fake.behave({ tokens: 2 });
  const ok = await c.openai.batches.create({ input_file_id: (await uploadBatchFile(c.openai, [chatLine(0), chatLine(1)])).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const bad = await c.openai.batches.create({ input_file_id: (await uploadBatchFile(c.openai, [chatLine(0), "nope"])).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  t.fake.behave({ tokens: 2, delayHeadersMs: 100 });
  const slow = await c.openai.batches.create({ input_file_id: (await uploadBatchFile(c.openai, Array.from({ length: 40 }, (_, i) => chatLine(i)))).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  await c.openai.batches.cancel(slow.id);
  const final = await Promise.all([ok, bad, slow].map((b) => waitForBatch(c.openai, b.id)));
  expect(final.map((b) => b.status)).toEqual(["completed", "failed", "cancelled"]);

  const got = await receiver.waitFor((r) => r.filter((x) => x.path === "/batches").length >= 3, 20_000);
  const events = got.filter((x) => x.path === "/batches").map((r) => verified(created.secret, r));
  expect(events.map((e) => `${e.type} ${e.data.id}`).sort()).toEqual([`batch.cancelled ${slow.id}`, `batch.completed ${ok.id}`, `batch.failed ${bad.id}`].sort());
  const completed = events.find((e) => e.type === "batch.completed");
  expect(completed.data).toMatchObject({ object: "batch", status: "completed", request_counts: { total: 2, completed: 2, failed: 0 }, output_file_id: final[0]!.output_file_id });
  expect(events.find((e) => e.type === "batch.failed").data.errors.data[0]).toMatchObject({ code: "invalid_json_line", line: 2 });
  await Bun.sleep(300);
  expect(receiver.requests.filter((x) => x.path === "/batches")).toHaveLength(3);
  expect(receiver.requests.filter((x) => x.path === "/videos-only")).toHaveLength(0);
}, 60_000);
