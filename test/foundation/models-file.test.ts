/**
 * A models file adds to the built-in models (use-lite, preview-motion) unless it says
 * `builtins: false`, and boot logs every served model with its plugin and prices in USD.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../src/errors.ts";
import { parseModelsFile } from "../../src/models-file.ts";
import { resolveModelList } from "../../src/registry/model-registry.ts";
import { builtinPlugins } from "../../src/registry/builtin-plugins.ts";
import { usd } from "../../src/registry/describe-model.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { spawnServer, type ChildServer } from "../support/child-server.ts";
import { startTestServer, testConfig } from "../support/harness.ts";
import { buildModels } from "../../src/registry/build-models.ts";
import { createLogger } from "../../src/logger.ts";

let fake: FakeOpenAI;
const dir = mkdtempSync(join(tmpdir(), "reelay-models-file-"));
const chatModel = () => ({ id: "chat-x", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 2_000_000, outputPerMillion: 6_000_000 } });
function modelsFile(name: string, doc: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(doc));
  return file;
}
beforeAll(async () => { fake = await startFakeOpenAI(); });
afterAll(async () => {
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function servedIds(env: Record<string, string>) {
  const s = await startTestServer(env);
  try {
    const { key } = await s.newClient();
    const list = (await (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: Array<{ id: string }> };
    return list.data.map((m) => m.id).sort();
  } finally {
    await s.close();
  }
}

describe("built-in models beside a models file", () => {
  test("declaring one chat model keeps use-lite and preview-motion", async () => {
    const ids = await servedIds({ REELAY_MODELS_FILE: modelsFile("one.json", { models: [chatModel()] }) });
    expect(ids).toEqual(expect.arrayContaining(["chat-x", "preview-motion", "use-lite"]));
  }, 60_000);

  test("`builtins: false` serves only the file's models", async () => {
    const ids = await servedIds({ REELAY_MODELS_FILE: modelsFile("only.json", { builtins: false, models: [chatModel()] }) });
    expect(ids).toEqual(["chat-x"]);
  }, 60_000);

  test("a file entry with a built-in's id replaces the built-in", () => {
    const file = parseModelsFile({ models: [{ id: "preview-motion", plugin: "preview-video", pricing: { perSecond: 50_000 } }] });
    const list = resolveModelList(file.models, builtinPlugins, [], file.builtins);
    expect(list.filter((m) => m.id === "preview-motion")).toEqual([expect.objectContaining({ pricing: { perSecond: 50_000 } })]);
    expect(list.map((m) => m.id)).toContain("use-lite");
  });

  test("`builtins` must be a boolean, and a misspelt top-level key is refused, not ignored", () => {
    expect(parseModelsFile({ models: [] }).builtins).toBe(true);
    expect(parseModelsFile({ builtins: false, models: [] }).builtins).toBe(false);
    const err = (doc: unknown) => { try { parseModelsFile(doc); } catch (e) { return e as ConfigError; } throw new Error("accepted"); };
    expect(err({ builtins: "no", models: [] }).key).toBe("builtins");
    expect(err({ builtin: false, models: [] })).toMatchObject({ key: "builtin", message: expect.stringContaining("builtins: false") });
  });
});

describe("aliases", () => {
  /** what boot says of this models file: the config is read (the file checked), then the models built (checked against the built-ins) */
  const boot = async (doc: unknown) => {
    try {
      const config = testConfig({ REELAY_MODELS_FILE: modelsFile(`aliases-${Math.random().toString(36).slice(2)}.json`, doc) });
      await (await buildModels(config, createLogger(config))).close();
      return "booted";
    } catch (e) {
      return (e as Error).message;
    }
  };

  test("an alias resolves to its model everywhere a model is named; the model keeps its id", async () => {
    const registry = await buildModels(testConfig({ REELAY_MODELS_FILE: modelsFile("aliased.json", { builtins: false, models: [{ ...chatModel(), aliases: ["claude-sonnet-4-5", "gpt-4o"] }] }) }), createLogger(testConfig()));
    try {
      expect(registry.get("gpt-4o")).toBe(registry.get("chat-x")!);
      expect(registry.get("claude-sonnet-4-5")).toMatchObject({ id: "chat-x", aliases: ["claude-sonnet-4-5", "gpt-4o"] });
      expect(registry.list().map((m) => m.id)).toEqual(["chat-x"]);
    } finally {
      await registry.close();
    }
  });

  test("a name that would belong to two models is refused at boot, naming both", async () => {
    const other = { id: "chat-y", plugin: "openai-compatible", options: { baseUrl: "http://127.0.0.1:9/v1" }, pricing: {} };
    expect(await boot({ models: [{ ...chatModel(), aliases: ["chat-y"] }, other] })).toBe('invalid configuration: models[0].aliases: "chat-y" (an alias of model "chat-x") is already the id of models[1] ("chat-y"); a name may belong to one model only');
    expect(await boot({ models: [{ ...chatModel(), aliases: ["fast"] }, { ...other, aliases: ["fast"] }] })).toContain('models[1].aliases: "fast" (an alias of model "chat-y") is already an alias of models[0] (model "chat-x")');
    expect(await boot({ models: [{ ...chatModel(), aliases: ["chat-x"] }] })).toContain('"chat-x" (an alias of model "chat-x") is already the id of models[0]');
    // a built-in model's id is taken too (the file keeps the built-ins)
    expect(await boot({ models: [{ ...chatModel(), aliases: ["use-lite"] }] })).toContain('"use-lite" (an alias of model "chat-x") is already the id of models[');
    expect(await boot({ models: [{ ...chatModel(), aliases: ["ok", "ok"] }] })).toContain("models[0].aliases: expected a list of distinct model names");
    expect(await boot({ models: [{ ...chatModel(), aliases: "claude" }] })).toContain("models[0].aliases: expected a list");
    expect(await boot({ models: [{ ...chatModel(), aliases: ["bad name"] }] })).toContain("models[0].aliases: expected a list of distinct model names");
    expect(await boot({ models: [{ ...chatModel(), aliases: ["claude"], fallbacks: ["claude"] }] })).toContain('model "chat-x" lists itself as a fallback (by its alias "claude")');
  });
});

describe("boot log", () => {
  let server: ChildServer;
  afterAll(() => server?.stop());

  test("one 'model served' line per model, prices in USD", async () => {
    server = await spawnServer({ REELAY_DATA_DIR: join(dir, "data"), REELAY_MODELS_FILE: modelsFile("log.json", { models: [chatModel()] }) });
    const served = Object.fromEntries(server.logLines().filter((l) => l.msg === "model served").map((l) => [l.model, l]));
    expect(served["chat-x"]).toMatchObject({ plugin: "openai-compatible", capabilities: ["chat"], prices: "$2.00 per 1M input tokens, $6.00 per 1M output tokens" });
    expect(served["use-lite"]).toMatchObject({ plugin: "local-embeddings", capabilities: ["embeddings"], prices: "$0.02 per 1M input tokens" });
    expect(served["preview-motion"]).toMatchObject({ plugin: "preview-video", capabilities: ["video"], prices: "$0.03 per second of video" });
  }, 60_000);

  test("USD formatting keeps every micro-dollar", () => {
    expect([usd(2_000_000), usd(150_000), usd(20_000), usd(1), usd(1_234_567), usd(0)]).toEqual(["$2.00", "$0.15", "$0.02", "$0.000001", "$1.234567", "$0.00"]);
  });
});
