/**
 * /readyz semantics through the real server: ready once the database is migrated, each model's load
 * state reported beside it and never blocking; a request for a model still loading waits for it,
 * bounded by REELAY_LOAD_WAIT_SECONDS (then 503 model_loading + Retry-After); a failed load is a 503
 * model_unavailable for that model only. The model here is an external plugin whose `load` finishes
 * when the test says so.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";

/** one pending load per model id: the test resolves or rejects it */
const gates = new Map<string, { resolve(): void; reject(e: Error): void; started: boolean }>();
(globalThis as any).__reelayLoadGates = {
  next(id: string) {
    return new Promise<void>((resolve, reject) => gates.set(id, { resolve, reject, started: true }));
  },
};

let pluginsDir: string;
beforeAll(() => {
  pluginsDir = mkdtempSync(join(tmpdir(), "reelay-gated-"));
  writeFileSync(join(pluginsDir, "gated.js"), `
export default {
  name: "gated", apiVersion: 2,
  models: [{ id: "gated-emb", pricing: { inputPerMillion: 1000000 } }],
  create(ctx) {
    return {
      embeddings: {
        supportsDimensions: false,
        countTokens: (inputs) => inputs.map(() => 1),
        async embed(req) {
          return { data: req.inputs.map((_, index) => ({ index, embedding: new Float32Array([0.6, 0.8]) })), usage: { prompt_tokens: req.inputs.length, total_tokens: req.inputs.length } };
        },
      },
      load: () => globalThis.__reelayLoadGates.next(ctx.modelId),
    };
  },
};`);
});

let server: TestServer | null = null;
afterEach(async () => {
  for (const g of gates.values()) g.resolve(); // never leave a load hanging into the next test
  gates.clear();
  await server?.close();
  server = null;
});

const boot = async (env: Record<string, string> = {}) => (server = await startTestServer({ REELAY_PLUGINS_DIR: pluginsDir, ...env }));
const readyz = async (s: TestServer) => {
  const r = await fetch(s.url + "/readyz");
  return { status: r.status, body: (await r.json()) as { status: string; models: Array<{ id: string; state: string; error?: string; load_ms?: number }> } };
};
const stateOf = (body: { models: Array<{ id: string; state: string }> }, id: string) => body.models.find((m) => m.id === id)?.state;
const embed = (s: TestServer, key: string) =>
  fetch(s.url + "/v1/embeddings", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "gated-emb", input: "hello" }) });
const waitFor = async (what: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await Bun.sleep(20);
  }
};

describe("/readyz and model loading", () => {
  test("ready once migrated while a preloaded model is still loading; its request waits and is served when the load ends", async () => {
    const s = await boot({ REELAY_PRELOAD_MODELS: "gated-emb" });
    await waitFor(() => gates.get("gated-emb")?.started === true);
    const before = await readyz(s);
    expect(before.status).toBe(200);
    expect(before.body.status).toBe("ready");
    expect(stateOf(before.body, "gated-emb")).toBe("loading");
    expect(stateOf(before.body, "use-lite")).toBe("unloaded"); // lazy: nobody asked for it
    expect(stateOf(before.body, "preview-motion")).toBe("ready"); // nothing to load

    const { key, accountId } = await s.newClient();
    let settled = false;
    const pending = embed(s, key).then((r) => ((settled = true), r));
    await Bun.sleep(300);
    expect(settled).toBe(false); // waiting, not refused
    gates.get("gated-emb")!.resolve();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
    const after = await readyz(s);
    expect(after.body.models.find((m) => m.id === "gated-emb")).toMatchObject({ state: "ready", load_ms: expect.any(Number) });
    const acct = (await (await s.admin(`/admin/accounts/${accountId}`)).json()) as { held: number; balance: number };
    expect(acct.held).toBe(0);
    expect(acct.balance).toBe(10_000_000 - 1); // 1 token at 1 USD per million tokens
  });

  test("a lazy model loads on its first request; past REELAY_LOAD_WAIT_SECONDS the client gets 503 model_loading with Retry-After, then is served", async () => {
    const s = await boot({ REELAY_LOAD_WAIT_SECONDS: "1" });
    expect(stateOf((await readyz(s)).body, "gated-emb")).toBe("unloaded");
    const { key, accountId } = await s.newClient();
    const t0 = performance.now();
    const first = await embed(s, key);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(((await first.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: "model_loading", type: "service_unavailable" });
    expect(stateOf((await readyz(s)).body, "gated-emb")).toBe("loading");
    gates.get("gated-emb")!.resolve();
    await waitFor(async () => stateOf((await readyz(s)).body, "gated-emb") === "ready");
    expect((await embed(s, key)).status).toBe(200);
    const acct = (await (await s.admin(`/admin/accounts/${accountId}`)).json()) as { held: number; balance: number };
    expect(acct).toMatchObject({ held: 0, balance: 10_000_000 - 1 }); // the 503 was not charged
  });

  test("a failed load: that model answers 503 model_unavailable with Retry-After, /readyz stays 200 and names the error", async () => {
    const s = await boot();
    const { key } = await s.newClient();
    const pending = embed(s, key);
    await waitFor(() => gates.get("gated-emb")?.started === true);
    gates.get("gated-emb")!.reject(new Error("weights file is truncated"));
    const res = await pending;
    expect(res.status).toBe(503);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("model_unavailable");
    expect(body.error.message).toContain("weights file is truncated");
    const r = await readyz(s);
    expect(r.status).toBe(200);
    expect(r.body.models.find((m) => m.id === "gated-emb")).toMatchObject({ state: "failed", error: "weights file is truncated" });
    // another model is unaffected
    const other = await fetch(s.url + "/v1/models/preview-motion", { headers: { authorization: `Bearer ${key}` } });
    expect(other.status).toBe(200);
  });

  test("REELAY_PRELOAD_MODELS naming an unknown model stops the boot", async () => {
    await expect(startTestServer({ REELAY_PLUGINS_DIR: pluginsDir, REELAY_PRELOAD_MODELS: "gated-emb,nope" })).rejects.toThrow(/REELAY_PRELOAD_MODELS.*"nope"/);
  });
});
