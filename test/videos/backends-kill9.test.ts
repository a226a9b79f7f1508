/**
 * The four video backends survive a kill -9 between submit and completion: the server (a child
 * process) is killed while a job runs on each of ComfyUI, Replicate, fal and an OpenAI-style
 * upstream (the fakes, in this process); the restarted server follows the same upstream jobs (each
 * upstream saw exactly one submit), every job completes, each is charged once, no hold stays open
 * and the ledger sums to the balance.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, dropDatabase, freePort } from "../support/harness.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { startFakeComfy } from "../fakes/comfyui.ts";
import { startFakeReplicate } from "../fakes/replicate.ts";
import { startFakeFal } from "../fakes/fal.ts";
import { startFakeOpenAIVideos } from "../fakes/openai-videos.ts";
import { client, pngBase64 } from "./support.ts";

const PRICE = 40_000;
const RUN_MS = 4_000;
const KEYS = { REELAY_T9_REPLICATE: "r8_kill9_token_0123456789", REELAY_T9_FAL: "fal-kill9-key:0123456789", REELAY_T9_OPENAI: "sk-kill9-0123456789" };
const comfy = await startFakeComfy({ queueMs: 100, runMs: RUN_MS });
const replicate = await startFakeReplicate({ apiKey: KEYS.REELAY_T9_REPLICATE, startMs: 100, runMs: RUN_MS });
const fal = await startFakeFal({ apiKey: KEYS.REELAY_T9_FAL, queueMs: 100, runMs: RUN_MS });
const openai = await startFakeOpenAIVideos({ apiKey: KEYS.REELAY_T9_OPENAI, queueMs: 100, runMs: RUN_MS });
const children: ChildServer[] = [];
let databaseUrl: string | undefined;

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill9().catch(() => {})));
  await Promise.all([comfy.stop(), replicate.stop(), fal.stop(), openai.stop()]);
  if (databaseUrl) await dropDatabase(databaseUrl);
});

function modelsFile(): string {
  const model = (id: string, plugin: string, options: Record<string, unknown>) => ({ id, plugin, options: { pollIntervalMs: 200, ...options }, pricing: { perSecond: PRICE }, allowPrivateNetwork: true });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-kill9-backends-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    model("comfy", "comfyui", { baseUrl: comfy.url, workflowFile: join(import.meta.dir, "../../examples/comfyui/wan22-i2v.json") }),
    // webhooks on; a callback sent while the server is down is lost, so the fallback poll is short here
    model("replicate", "replicate", { model: "wan-video/wan-2.2-i2v-fast", baseUrl: replicate.url, apiKeyEnv: "REELAY_T9_REPLICATE", webhookPollIntervalMs: 1_000, inputMapping: { size: "width,height" } }),
    model("fal", "fal", { app: "fal-ai/kling-video/v2.1/standard/image-to-video", baseUrl: fal.url, apiKeyEnv: "REELAY_T9_FAL", inputMapping: { size: "width,height", seconds: "duration" } }),
    model("openai", "openai-videos", { baseUrl: openai.url, apiKeyEnv: "REELAY_T9_OPENAI", upstreamModel: "sora-2", sizes: ["624x624"], seconds: [2] }),
  ] }));
  return file;
}

async function ledger(accountId: string) {
  const sql = postgres(databaseUrl!, { max: 1, onnotice: () => {} });
  try {
    const [acct] = await sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${accountId}`;
    const [{ open }] = await sql`SELECT count(*)::int AS open FROM holds WHERE account_id = ${accountId} AND state = 'open'`;
    const charges = await sql`SELECT ref, count(*)::int AS n, sum(-amount)::float8 AS total FROM ledger WHERE account_id = ${accountId} AND kind = 'charge' GROUP BY ref`;
    const [{ sum }] = await sql`SELECT coalesce(sum(amount), 0)::float8 AS sum FROM ledger WHERE account_id = ${accountId}`;
    return { balance: acct!.balance, held: acct!.held, openHolds: open, charges: new Map(charges.map((r: any) => [r.ref, { n: r.n, total: r.total }])), ledgerSum: sum };
  } finally {
    await sql.end();
  }
}

test("kill -9 while a job runs on each backend; the restarted server follows the same upstream jobs: all complete, each charged once", async () => {
  databaseUrl = await createTestDatabase();
  const port = freePort();
  const env = { DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile(), REELAY_PUBLIC_URL: `http://127.0.0.1:${port}`, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "1500", ...KEYS };
  const a = await spawnServer(env, { port });
  children.push(a);
  const c = await newClientOn(a, 10_000_000);
  const ids: Record<string, string> = {};
  for (const model of ["comfy", "replicate", "fal", "openai"]) {
    const res = await client(a.url, c.key).submit({ model, prompt: `a lantern (${model})`, image: pngBase64(), seconds: 2, size: model === "openai" ? "624x624" : "480x832" });
    expect(res.status).toBe(202);
    ids[model] = ((await res.json()) as { id: string }).id;
  }
  // every upstream has its job and every handle is saved (processing), well before the 4 s runs end
  for (let i = 0; i < 100; i++) {
    const states = await Promise.all(Object.values(ids).map(async (id) => ((await (await client(a.url, c.key).get(id)).json()) as any).status));
    if (states.every((st) => st === "processing")) break;
    await Bun.sleep(50);
  }
  expect([comfy.count("prompt"), replicate.count("create"), fal.count("submit"), openai.count("create")]).toEqual([1, 1, 1, 1]);
  await a.kill9();
  const mid = await ledger(c.accountId);
  expect({ openHolds: mid.openHolds, charges: mid.charges.size }).toEqual({ openHolds: 4, charges: 0 });

  const b = await spawnServer(env, { port });
  children.push(b);
  const api = client(b.url, c.key);
  const finals = await Promise.all(Object.entries(ids).map(async ([model, id]) => [model, (await api.waitFinal(id, 40_000)).status]));
  expect(Object.fromEntries(finals)).toEqual({ comfy: "completed", replicate: "completed", fal: "completed", openai: "completed" });
  // followed, not resubmitted: still one submit per upstream
  expect([comfy.count("prompt"), replicate.count("create"), fal.count("submit"), openai.count("create")]).toEqual([1, 1, 1, 1]);
  const after = await ledger(c.accountId);
  expect({ openHolds: after.openHolds, held: after.held }).toEqual({ openHolds: 0, held: 0 });
  for (const id of Object.values(ids)) expect(after.charges.get(id)).toEqual({ n: 1, total: 2 * PRICE });
  expect(after.balance).toBe(10_000_000 - 4 * 2 * PRICE);
  expect(after.ledgerSum).toBe(after.balance);
}, 90_000);
