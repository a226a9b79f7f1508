/**
 * The docs' models files (docs/configuration.md's example and docs/providers.md's several
 * deployments per model, with fallbacks) are valid as written: together they boot a registry with
 * every model, and the deployments show in the upstream report /admin/upstreams serves.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { createLogger } from "../../src/logger.ts";
import { buildModels } from "../../src/registry/build-models.ts";
import { upstreamReport } from "../../src/registry/upstream-report.ts";
import type { ModelRegistry } from "../../src/registry/model-registry.ts";
import { testConfig } from "../support/harness.ts";
import { blocksCheckedBy } from "./doc-blocks.ts";

let registry: ModelRegistry | undefined;
afterAll(() => registry?.close());

test("the docs' models examples boot together: deployments, routing options and fallbacks are valid", async () => {
  const checked = blocksCheckedBy("test/readme/models-example.test.ts");
  expect(checked.map((b) => `${b.file} ${b.lang}`)).toEqual(["docs/configuration.md yaml", "docs/providers.md yaml"]);
  const blocks = checked.map((b) => parse(b.code) as { models: unknown[] });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-readme-models-")), "models.json");
  // local-llm checks that its GGUF file exists: the example's path is the operator's
  const models = blocks.flatMap((b) => b.models as Array<{ plugin: string }>).filter((m) => m.plugin !== "local-llm");
  writeFileSync(file, JSON.stringify({ models }));
  for (const k of ["TOGETHER_API_KEY", "RUNPOD_API_KEY", "VLLM_API_KEY"]) process.env[k] ??= `readme-test-${k.toLowerCase()}`;
  const config = testConfig({ REELAY_MODELS_FILE: file });
  registry = await buildModels(config, createLogger(config));
  expect(registry.get("llama-3.1-8b")!.fallbacks).toEqual(["llama-3-8b"]);
  const report = Object.fromEntries(upstreamReport(registry).map((m) => [m.model, m.deployments.map((d) => `${d.name} ×${d.weight} ${d.state}`)]));
  expect(report["llama-3.1-8b"]).toEqual(["vllm-a ×3 closed", "vllm-b ×3 closed", "together ×1 closed"]);
  expect(report["wan-i2v"]).toEqual(["runpod-eu ×1 closed", "gpu-box ×1 closed"]);
});
