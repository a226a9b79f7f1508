/**
 * The plugin contract: one suite every plugin runs, built-in or external, under `bun test`:
 *
 *   import { runPluginContract } from "@reelay/plugin-sdk/contract";
 *   runPluginContract("my-plugin", () => plugin, { capabilities: ["chat"], options: () => ({ baseUrl: fake.url }), failures });
 *
 * It checks what reelay relies on and nothing provider-specific, with the host's own checks
 * (checks.ts) and its own table of error meanings (failure.ts): a valid declaration and options
 * schema; results the host would accept (shapes, usage integers within the request, stream events
 * with their JSON, the usage chunk rules, MP4s, progress 0–1, string handles); what is billed;
 * mid-stream aborts; and, given ways to make your upstream fail (`failures`), that every failure
 * is the PluginError kind that gives the client the documented status and the scheduler the right
 * retry decision.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TSchema } from "@sinclair/typebox";
import type { Capability, ModelInstance } from "../capabilities.ts";
import { problemsWithInstance } from "../checks.ts";
import { problemsWithPricing } from "../pricing.ts";
import { checkOptions } from "../option-check.ts";
import type { MessagesRequest } from "../anthropic-messages.ts";
import type { ChatCompletionRequest } from "../openai-chat.ts";
import type { ReelayPlugin } from "../plugin.ts";
import { testPluginContext, type TestContextOverrides } from "../testing.ts";
import { PLUGIN_API_VERSION } from "../version.ts";
import { chatContract } from "./chat.ts";
import { embeddingsContract } from "./embeddings.ts";
import { messagesContract } from "./messages.ts";
import type { FailureScenarios } from "./failures.ts";
import { videoContract, type VideoContractOptions } from "./video.ts";

export type { FailureScenarios } from "./failures.ts";
export { problemWithMessagesGrammar } from "./messages.ts";
export { CONTRACT_PNG } from "./video.ts";

export interface ContractOptions {
  /** the capabilities the created instance must have, exactly; only their tests are registered */
  capabilities: Capability[];
  /** the model's options (validated against the plugin's schema first, as the host does); a function is called after `setup` */
  options?: Record<string, unknown> | (() => Record<string, unknown>);
  /** context overrides: modelId, envVars, host services, fetch … */
  ctx?: TestContextOverrides;
  setup?: () => Promise<void> | void;
  teardown?: () => Promise<void> | void;
  chat?: { body?: Partial<ChatCompletionRequest> };
  /** the instance has a native `messages` capability (with chat): give this to test it (required when it has one) */
  messages?: { body?: Partial<MessagesRequest> };
  embeddings?: { inputs?: string[] };
  video?: VideoContractOptions;
  /** ways to make your upstream fail; each scenario you give is tested for every capability */
  failures?: FailureScenarios;
}

export interface ContractHarness {
  plugin: () => ReelayPlugin;
  instance: () => ModelInstance;
  /** another instance, e.g. with short timeouts; closed after the suite */
  create: (extraOptions?: Record<string, unknown>) => Promise<ModelInstance>;
  opts: ContractOptions;
}

export function runPluginContract(name: string, makePlugin: () => ReelayPlugin | Promise<ReelayPlugin>, opts: ContractOptions): void {
  describe(`plugin contract: ${name}`, () => {
    let plugin: ReelayPlugin;
    let instance: ModelInstance;
    const extra: ModelInstance[] = [];
    const rawOptions = () => (typeof opts.options === "function" ? opts.options() : (opts.options ?? {}));
    const resolved = (over: Record<string, unknown> = {}) => {
      const options = { ...rawOptions(), ...over };
      return plugin.options ? checkOptions(plugin.options as TSchema, options).options : options;
    };
    const create = async (over: Record<string, unknown> = {}) => {
      const i = await plugin.create(testPluginContext(resolved(over), opts.ctx));
      await i.load?.({ signal: new AbortController().signal }); // as the host does before the first capability call
      return i;
    };
    const harness: ContractHarness = {
      plugin: () => plugin,
      instance: () => instance,
      create: async (over) => {
        const i = await create(over);
        extra.push(i);
        return i;
      },
      opts,
    };

    beforeAll(async () => {
      await opts.setup?.();
      plugin = await makePlugin();
      instance = await create();
    });
    afterAll(async () => {
      for (const i of [instance, ...extra]) await i?.close?.();
      await opts.teardown?.();
    });

    test("declares a name, API version, create(), and well-formed models", () => {
      expect(plugin.name).toMatch(/^[a-z0-9][\w.-]*$/i);
      expect(plugin.apiVersion).toBe(PLUGIN_API_VERSION);
      expect(typeof plugin.create).toBe("function");
      const ids = (plugin.models ?? []).map((m) => m.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const m of plugin.models ?? []) {
        expect(m.id).toMatch(/^[A-Za-z0-9][\w.:/-]{0,127}$/);
        expect(problemsWithPricing(m.pricing, `models[${m.id}].pricing`)).toEqual([]);
      }
    });

    test("these options pass the plugin's schema and validateOptions; nonsense is answered, never thrown", () => {
      if (plugin.options) {
        expect(typeof plugin.options).toBe("object");
        expect(checkOptions(plugin.options as TSchema, rawOptions()).problems).toEqual([]);
        const nonsense = checkOptions(plugin.options as TSchema, { "contract-bogus": {}, baseUrl: 42, timeouts: "soon", maxConcurrency: "many" });
        expect(Array.isArray(nonsense.problems)).toBe(true);
      }
      if (plugin.validateOptions) {
        expect(plugin.validateOptions(resolved())).toEqual([]);
        const answer = plugin.validateOptions({ maxConcurrency: "many", baseUrl: 42, timeouts: "soon", "contract-bogus": {} });
        expect(Array.isArray(answer) && answer.every((p) => typeof p === "string")).toBe(true);
      }
    });

    test(`create gives a usable instance with exactly ${opts.capabilities.join(", ")}`, () => {
      expect(problemsWithInstance(instance)).toEqual([]);
      expect((["chat", "embeddings", "video"] as const).filter((c) => instance[c])).toEqual([...opts.capabilities].sort());
      // a messages capability is tested only when the contract is told about it: an untested one must not slip through
      expect({ messages: instance.messages !== undefined }).toEqual({ messages: opts.messages !== undefined });
    });

    if (opts.capabilities.includes("chat")) chatContract(harness);
    if (opts.messages) messagesContract(harness);
    if (opts.capabilities.includes("embeddings")) embeddingsContract(harness);
    if (opts.capabilities.includes("video")) videoContract(harness);

    test("close() may be called twice, also on an instance that was never loaded", async () => {
      const other = await plugin.create(testPluginContext(resolved(), opts.ctx));
      await other.close?.();
      await other.close?.();
    });
  });
}
