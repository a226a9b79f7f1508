/**
 * Chat (plain and streamed), embeddings and video all go through the one charge lifecycle: each
 * request or job leaves exactly one usage row whose cost is its one charge ledger row, the failed
 * ones cost nothing, and the ledger sums to the balance.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { query } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client as videoClient, pngBase64 } from "../videos/support.ts";
import { expectInvariants } from "./support.ts";

let fake: FakeOpenAI;
let s: TestServer;

const dir = mkdtempSync(join(tmpdir(), "reelay-lifecycle-"));

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 4 });
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 },
      { id: "emb", plugin: "openai-compatible", options: { baseUrl: fake.url, capabilities: ["embeddings"] }, pricing: { inputPerMillion: 1_000_000 } },
      { id: "preview-motion", plugin: "preview-video", options: {}, pricing: { perSecond: 30_000 } },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
}, 60_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s?.close();
  await fake?.stop();
});

test("one usage row and at most one charge per request or job, from chat, streamed chat, embeddings and video; failures cost nothing", async () => {
  const c = await s.newClient({ credits: 5_000_000 });
  const post = (path: string, body: unknown) => fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const messages = [{ role: "user", content: "Say three words." }];
  const refs: Record<string, string> = {};
  const ok = async (name: string, res: Response) => {
    expect({ name, status: res.status }).toEqual({ name, status: 200 });
    refs[name] = res.headers.get("x-request-id")!;
    await res.text();
  };
  await ok("chat", await post("/v1/chat/completions", { model: "chat", messages }));
  await ok("stream", await post("/v1/chat/completions", { model: "chat", messages, stream: true }));
  await ok("embeddings", await post("/v1/embeddings", { model: "emb", input: ["one", "two"] }));
  fake.behave({ status: 500 });
  const failed = await post("/v1/chat/completions", { model: "chat", messages });
  expect(failed.status).toBe(502);
  refs.failed = failed.headers.get("x-request-id")!;
  fake.behave({});
  const video = videoClient(s.url, c.key);
  const job = (await (await video.submit({ model: "preview-motion", prompt: "a slow zoom", image: pngBase64(), seconds: 1 })).json()) as { id: string };
  expect((await video.waitFinal(job.id, 60_000)).status).toBe("completed");
  refs.video = job.id;

  await s.deps.billing.sync();
  const rows = await query<{ ref: string; kind: string; cost: number; status: number; charges: number; charged: number }>(s.deps.database.db, sql`
    SELECT u.ref, u.kind, u.cost::float8 AS cost, u.status,
      (SELECT count(*) FROM ledger l WHERE l.ref = u.ref AND l.kind = 'charge')::int AS charges,
      COALESCE((SELECT -sum(amount) FROM ledger l WHERE l.ref = u.ref AND l.kind = 'charge'), 0)::float8 AS charged
    FROM usage_records u WHERE u.account_id = ${c.accountId}`);
  const byRef = new Map(rows.map((r) => [r.ref, r]));
  expect(rows.length).toBe(5);
  const cost = 11 * 3 + 4 * 15;
  expect(byRef.get(refs.chat!)).toMatchObject({ kind: "chat", cost, charges: 1, charged: cost });
  expect(byRef.get(refs.stream!)).toMatchObject({ kind: "chat", cost, charges: 1, charged: cost });
  expect(byRef.get(refs.embeddings!)).toMatchObject({ kind: "embeddings", cost: 2, charges: 1, charged: 2 });
  expect(byRef.get(refs.failed!)).toMatchObject({ kind: "chat", status: 502, cost: 0, charges: 0, charged: 0 });
  expect(byRef.get(refs.video!)).toMatchObject({ kind: "video", cost: 30_000, charges: 1, charged: 30_000 });
  expect(((await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${c.key}` } })).json()) as any)).toMatchObject({ balance: 5_000_000 - 2 * cost - 2 - 30_000, held: 0 });
  await expectInvariants(s.deps.database.db, [c.accountId]);
}, 90_000);
