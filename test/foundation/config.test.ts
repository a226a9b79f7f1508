import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { loadConfig } from "../../src/config.ts";
import { ConfigError } from "../../src/errors.ts";
import { parseModels } from "../../src/models-file.ts";
import { startServer } from "../../src/boot.ts";
import { testConfig } from "../support/harness.ts";

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration", () => {
  test("defaults with nothing configured: embedded PGlite under ./data, built-in models", () => {
    const c = loadConfig({});
    expect(c.databaseUrl).toBeNull();
    expect(c.dataDir).toEndWith("/data");
    expect(c.port).toBe(8080);
    expect(c.models).toBeNull();
    expect(c.keyCacheMs).toBe(5000);
  });

  test("bad environment values name the variable", () => {
    expect(configError(() => loadConfig({ PORT: "eighty" })).message).toContain("PORT");
    expect(configError(() => loadConfig({ PORT: "70000" })).message).toContain("PORT");
    expect(configError(() => loadConfig({ DATABASE_URL: "mysql://x" })).message).toContain("DATABASE_URL");
    expect(configError(() => loadConfig({ REELAY_LOG_LEVEL: "loud" })).message).toContain("REELAY_LOG_LEVEL");
    expect(configError(() => loadConfig({ REELAY_ADMIN_TOKEN: "short" })).message).toContain("REELAY_ADMIN_TOKEN");
    expect(configError(() => loadConfig({ REDIS_URL: "http://x" })).message).toContain("REDIS_URL");
  });

  test("bad models files name the key", () => {
    expect(configError(() => parseModels({})).key).toBe("models");
    expect(configError(() => parseModels({ models: [{ id: "a", plugin: "p", pricing: { perSecond: 1.5 } }] })).key).toBe("models[0].pricing.perSecond");
    expect(configError(() => parseModels({ models: [{ id: "a", plugin: "p", pricing: { perToken: 1 } }] })).key).toBe("models[0].pricing.perToken");
    expect(configError(() => parseModels({ models: [{ id: "a", plugin: "p" }, { id: "a", plugin: "p" }] })).key).toBe("models[1].id");
    expect(configError(() => parseModels({ models: [{ id: "a", plugin: "p", colour: "red" }] })).key).toBe("models[0].colour");
    expect(configError(() => parseModels({ models: [{ id: "a" }] })).key).toBe("models[0].plugin");
    expect(configError(() => parseModels({ models: [{ id: "a", plugin: "p", maxOutputTokens: 0 }] })).key).toBe("models[0].maxOutputTokens");
  });

  test("YAML and JSON models files are read", () => {
    const dir = mkdtempSync(join(tmpdir(), "reelay-cfg-"));
    writeFileSync(join(dir, "m.yaml"), "models:\n  - id: chat-a\n    plugin: openai-compatible\n    options: { baseUrl: 'http://127.0.0.1:1/v1' }\n    pricing: { inputPerMillion: 100, outputPerMillion: 200 }\n    maxOutputTokens: 512\n");
    const c = loadConfig({ REELAY_MODELS_FILE: join(dir, "m.yaml") });
    expect(c.models).toEqual([{ id: "chat-a", plugin: "openai-compatible", options: { baseUrl: "http://127.0.0.1:1/v1" }, pricing: { inputPerMillion: 100, outputPerMillion: 200 }, maxOutputTokens: 512, contextLength: undefined, ownedBy: undefined }]);
    writeFileSync(join(dir, "bad.json"), "{ nope");
    expect(configError(() => loadConfig({ REELAY_MODELS_FILE: join(dir, "bad.json") })).key).toBe("REELAY_MODELS_FILE");
  });

  test("boot stops on an unknown plugin or bad plugin options, naming the model entry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reelay-cfg-"));
    const file = join(dir, "m.json");
    writeFileSync(file, JSON.stringify({ models: [{ id: "x", plugin: "no-such-plugin" }] }));
    await expect(startServer(testConfig({ REELAY_MODELS_FILE: file, REELAY_DATA_DIR: join(dir, "d1") }), { listen: false })).rejects.toThrow(/models\[0\]\.plugin.*no-such-plugin/);
    writeFileSync(file, JSON.stringify({ models: [{ id: "x", plugin: "openai-compatible", options: { baseUrl: "ftp://nope" } }] }));
    await expect(startServer(testConfig({ REELAY_MODELS_FILE: file, REELAY_DATA_DIR: join(dir, "d2") }), { listen: false })).rejects.toThrow(/models\[0\]\.options.*baseUrl/);
  }, 120_000);
});
