/**
 * GET /admin/batches against the real server and scheduler on a fresh Postgres database: two
 * accounts' batches (completed, failed, one still running with a line done) listed newest first as
 * their owners see them plus account and model; the account and status filters; cursor pages; a
 * viewer may read, a client key may not; a bad filter is a 400 naming it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chatLine, startBatchServer, uploadBatchFile, waitForBatch, type BatchClient, type BatchServer } from "../../../test/batches/batch-server.ts";

let t: BatchServer;
let a: BatchClient;
let b: BatchClient;
const ids = { completed: "", failed: "", running: "" };

const list = async (params = "", token?: string) => {
  const res = token ? await fetch(`${t.s.url}/admin/batches?${params}`, { headers: { authorization: `Bearer ${token}` } }) : await t.s.admin(`/admin/batches?${params}`);
  return { status: res.status, body: (await res.json()) as any };
};

/** poll the admin list until the batch is in the state `ok` wants */
async function waitUntil(id: string, ok: (batch: any) => boolean) {
  const until = performance.now() + 30_000;
  for (;;) {
    const batch = (await list()).body.data.find((x: any) => x.id === id);
    if (batch && ok(batch)) return batch;
    if (performance.now() > until) throw new Error(`batch ${id}: ${JSON.stringify(batch)}`);
    await Bun.sleep(50);
  }
}

beforeAll(async () => {
  t = await startBatchServer();
  // chat-c's upstream never answers: a batch with a chat-a line then chat-c lines stays in progress with one line done
  t.fake.behave({ hang: true }, { model: "chat-c" });
  a = await t.newClient();
  b = await t.newClient();
  const done = await a.openai.batches.create({ input_file_id: (await uploadBatchFile(a.openai, [chatLine(0), chatLine(1)])).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  ids.completed = (await waitForBatch(a.openai, done.id)).id;
  const bad = await b.openai.batches.create({ input_file_id: (await uploadBatchFile(b.openai, [{ ...chatLine(0), url: "/v1/embeddings" }])).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  ids.failed = (await waitForBatch(b.openai, bad.id)).id;
  const running = await b.openai.batches.create({ input_file_id: (await uploadBatchFile(b.openai, [chatLine(0), chatLine(1, "chat-c"), chatLine(2, "chat-c")])).id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  ids.running = running.id;
  await waitUntil(ids.running, (x) => x.status === "in_progress" && x.request_counts.completed === 1);
}, 90_000);
afterAll(async () => {
  if (ids.running) await b.openai.batches.cancel(ids.running);
  t.fake.reset();
  await t?.close();
});

describe("GET /admin/batches", () => {
  test("every account's batches, newest first, each as its owner sees it plus account_id and model", async () => {
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "list", has_more: false, first_id: ids.running, last_id: ids.completed });
    expect(r.body.data.map((x: any) => [x.id, x.account_id, x.status])).toEqual([
      [ids.running, b.accountId, "in_progress"],
      [ids.failed, b.accountId, "failed"],
      [ids.completed, a.accountId, "completed"],
    ]);
    for (const [item, owner] of [[r.body.data[0], b], [r.body.data[1], b], [r.body.data[2], a]] as const) {
      const { account_id, model, ...batch } = item;
      expect(batch).toEqual(await owner.get(`/v1/batches/${item.id}`));
    }
    const running = r.body.data[0];
    expect(running.request_counts).toEqual({ total: 3, completed: 1, failed: 0 });
    // the model is read from the batch's lines while they are kept; a final batch's are gone
    expect(running.model).toBe("chat-a");
    expect(r.body.data[2]).toMatchObject({ model: null, request_counts: { total: 2, completed: 2, failed: 0 } });
    expect(r.body.data[1].errors.data[0]).toMatchObject({ code: "invalid_url", line: 1 });
  });

  test("filters by account and by status", async () => {
    expect((await list(`account=${a.accountId}`)).body.data.map((x: any) => x.id)).toEqual([ids.completed]);
    expect((await list(`account=${b.accountId}`)).body.data.map((x: any) => x.id)).toEqual([ids.running, ids.failed]);
    expect((await list("status=failed")).body.data.map((x: any) => x.id)).toEqual([ids.failed]);
    expect((await list(`status=in_progress&account=${b.accountId}`)).body.data.map((x: any) => x.id)).toEqual([ids.running]);
    expect((await list(`status=completed&account=${b.accountId}`)).body).toEqual({ object: "list", data: [], first_id: null, last_id: null, has_more: false });
  });

  test("cursor pages: limit and after walk every batch once, in order", async () => {
    const seen: string[] = [];
    let after = "";
    for (let page = 0; page < 5; page++) {
      const r = await list(`limit=1${after ? `&after=${after}` : ""}`);
      expect(r.body.data).toHaveLength(1);
      seen.push(r.body.data[0].id);
      expect(r.body.last_id).toBe(r.body.data[0].id);
      if (!r.body.has_more) break;
      after = r.body.last_id;
    }
    expect(seen).toEqual([ids.running, ids.failed, ids.completed]);
    const two = await list(`limit=2&after=${ids.running}`);
    expect(two.body).toMatchObject({ first_id: ids.failed, last_id: ids.completed, has_more: false });
  });

  test("any operator role may read it; a client key may not", async () => {
    const viewer = (await (await t.s.admin("/admin/operators", { body: { name: "watcher", role: "viewer" } })).json()) as { token: string };
    expect((await list("", viewer.token)).body.data).toHaveLength(3);
    const client = await list("", a.key);
    expect(client.status).toBe(403);
    expect(client.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope" });
    expect((await list("", "not-a-token")).status).toBe(401);
  });

  test.each([
    ["status=running", "status"],
    ["status=", "status"],
    ["limit=0", "limit"],
    ["limit=201", "limit"],
  ])("%s → 400 envelope naming %s", async (params, param) => {
    const r = await list(params);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: "invalid_request_error", param });
    if (param === "status") expect(r.body.error.message).toContain("validating, failed, in_progress");
  });
});
