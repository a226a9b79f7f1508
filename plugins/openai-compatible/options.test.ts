/** The preset options as the host checks them at boot (each mistake named with its option, before anything is served), and an override at work. */
import { expect, test } from "bun:test";
import { checkOptions } from "@reelay/plugin-sdk";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { startFakeProvider } from "../../test/fakes/openai-presets.ts";
import plugin from "./index.ts";

const problems = (options: Record<string, unknown>) => {
  const checked = checkOptions(plugin.options!, options);
  return [...checked.problems.map((p) => `${p.option}: ${p.message}`), ...plugin.validateOptions!(checked.options as never)];
};

test("a preset gives the base URL; one without (azure-openai) needs the resource URL", () => {
  expect(problems({ provider: "groq" })).toEqual([]);
  expect(problems({ provider: "azure-openai" })).toEqual(['option "baseUrl": is required for provider azure-openai (its resource URL)']);
  expect(problems({ provider: "azure-openai", baseUrl: "https://r.openai.azure.com", apiVersion: "2024-10-21" })).toEqual([]);
  expect(problems({})).toEqual(['option "baseUrl": is required (or "deployments", a list of upstreams)']);
});

test("unknown providers, a key where none is sent and an apiVersion without versioned URLs are named", () => {
  expect(problems({ provider: "acme" })[0]).toStartWith('option "provider": unknown provider "acme" (one of openai, azure-openai, gemini');
  expect(problems({ provider: "vllm", apiKeyEnv: "VLLM_KEY" })).toEqual(['option "apiKeyEnv": vllm is called without a key (auth "none"); set auth: bearer (or api-key) to send one']);
  expect(problems({ provider: "vllm", apiKeyEnv: "VLLM_KEY", auth: "bearer" })).toEqual([]);
  expect(problems({ provider: "openai", apiVersion: "2024-10-21" })).toEqual(['option "apiVersion": openai has no versioned URLs (only azure-openai takes apiVersion)']);
  expect(problems({ deployments: [{ provider: "together" }, { provider: "nope" }, { baseUrl: "http://x:1/v1", provider: "azure-openai" }, {}] })).toEqual([
    'option "deployments.1.provider": unknown provider "nope" (one of openai, azure-openai, gemini, mistral, groq, together, fireworks, deepseek, xai, openrouter, cerebras, perplexity, ollama, vllm, sglang, llamacpp, lmstudio, tgi)',
    'option "deployments.3.baseUrl": is required',
  ]);
  expect(problems({ provider: "openrouter", headers: { "Bad Header": "x" }, reasoningField: "thoughts" }).map((p) => p.split(/[.:]/)[0])).toEqual(["headers", "reasoningField"]);
});

test("a model's options override its preset: a field the preset leaves out is sent again (and refused by the provider), headers merge", async () => {
  const groq = await startFakeProvider("groq");
  try {
    const make = (over: Record<string, unknown>) => {
      const checked = checkOptions(plugin.options!, { provider: "groq", baseUrl: groq.url, ...over });
      return plugin.create(testPluginContext(checked.options, { envVars: { GROQ_API_KEY: groq.apiKey } }) as never) as any;
    };
    const body = { model: "m", messages: [{ role: "user" as const, content: "hi" }], logprobs: true };
    await make({ headers: { "X-Team": "a" } }).chat.complete(body, testCall());
    expect(groq.requests.at(-1)!.body.logprobs).toBeUndefined(); // the preset leaves it out
    expect(groq.requests.at(-1)!.headers["x-team"]).toBe("a");
    const err = await make({ dropParams: [] }).chat.complete(body, testCall()).then(() => null, (e: any) => e);
    expect([err?.kind, err?.status, groq.requests.at(-1)!.body.logprobs]).toEqual(["upstream_http", 400, true]);
  } finally {
    await groq.stop();
  }
});
