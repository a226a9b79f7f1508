/**
 * Setup of the batch tests: the fake OpenAI upstream, reelay on a fresh Postgres database with a
 * chat and an embeddings model on it (and a quick scheduler), and helpers that run a batch the way
 * a client does with the official `openai` SDK.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import type { Logger } from "../../src/logger.ts";

/** live prices (micro-dollars per million tokens); batch lines pay half unless a model says otherwise */
export const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
export const EMBED_PRICING = { inputPerMillion: 1_000_000 };

export interface BatchClient {
  openai: OpenAI;
  key: string;
  keyId: string;
  accountId: string;
  get(path: string): Promise<any>;
}

export interface BatchServer {
  fake: FakeOpenAI;
  s: TestServer;
  dir: string;
  newClient(credits?: number, opts?: { models?: string[]; limits?: Record<string, number> }): Promise<BatchClient>;
  close(): Promise<void>;
}

export function modelsFile(dir: string, fakeUrl: string): string {
  const file = join(dir, "models.json");
  // generous: a loaded CI box (three shards at once) must not turn a slow fake into upstream timeouts
  const timeouts = { connectMs: 10_000, firstByteMs: 30_000, idleMs: 30_000, totalMs: 60_000 };
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-a", plugin: "openai-compatible", options: { baseUrl: fakeUrl, upstreamModel: "up-a", timeouts }, pricing: PRICING, maxOutputTokens: 64 },
      { id: "chat-c", plugin: "openai-compatible", options: { baseUrl: fakeUrl, timeouts }, pricing: { ...PRICING, batchPercent: 20 }, maxOutputTokens: 64 },
      { id: "emb", plugin: "openai-compatible", options: { baseUrl: fakeUrl, capabilities: ["embeddings"], timeouts }, pricing: EMBED_PRICING },
    ],
  }));
  return file;
}

export async function startBatchServer(env: Record<string, string> = {}, opts: { pglite?: boolean; clock?: () => number; fake?: FakeOpenAI; logger?: Logger } = {}): Promise<BatchServer> {
  const fake = opts.fake ?? (await startFakeOpenAI());
  const dir = mkdtempSync(join(tmpdir(), "reelay-batches-"));
  const s = await startTestServer({ REELAY_MODELS_FILE: modelsFile(dir, fake.url), REELAY_SCHEDULER_POLL_MS: "50", REELAY_BATCH_SLICE_LINES: "10", ...env }, opts);
  return {
    fake, s, dir,
    async newClient(credits = 100_000_000, o = {}) {
      const { key, keyId, accountId } = await s.newClient({ credits, models: o.models, limits: o.limits });
      const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json();
      return { openai: new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 }), key, keyId, accountId, get };
    },
    async close() {
      await s.close();
      if (!opts.fake) await fake.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const jsonl = (lines: unknown[]) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";

export const chatLine = (i: number, model = "chat-a") => ({ custom_id: `req-${i}`, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: `question ${i}` }], max_tokens: 5 } });
export const embedLine = (i: number) => ({ custom_id: `emb-${i}`, method: "POST", url: "/v1/embeddings", body: { model: "emb", input: `text number ${i}` } });

export async function uploadBatchFile(openai: OpenAI, lines: unknown[], name = "input.jsonl") {
  return openai.files.create({ file: await toFile(Buffer.from(jsonl(lines)), name), purpose: "batch" });
}

/** Poll batches.retrieve until the batch is in one of `statuses`. */
export async function waitForBatch(openai: OpenAI, id: string, statuses = ["completed", "failed", "expired", "cancelled"], timeoutMs = 60_000, pollMs = 50) {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const b = await openai.batches.retrieve(id);
    if (statuses.includes(b.status)) return b;
    if (performance.now() > until) throw new Error(`batch ${id} still ${b.status} (${JSON.stringify(b.request_counts)})`);
    await Bun.sleep(pollMs);
  }
}

/** The lines of a file (output or error), parsed. */
export async function fileLines(openai: OpenAI, id: string | null | undefined): Promise<any[]> {
  if (!id) return [];
  const text = await (await openai.files.content(id)).text();
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

/** Every usage row of the account (newest first). */
export async function usageRows(c: BatchClient): Promise<any[]> {
  const rows: any[] = [];
  for (let before: number | undefined; ; ) {
    const page = await c.get(`/v1/usage?limit=500${before ? `&before=${before}` : ""}`);
    rows.push(...page.data);
    if (!page.next_before) return rows;
    before = page.next_before;
  }
}
