/**
 * The host's side of the native Messages capability: what a route gets from checkedInstance —
 * the real anthropic plugin against the fake Anthropic API (the client's headers reach the
 * upstream, the stream's usage is read for billing, judged like chat's), and a plugin that returns
 * garbage (each violation a 502 invalid_plugin_result naming it, never a pass-through of garbage).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { credibleCount, credibleCacheCounts } from "../billing/index.ts";
import { createLogger } from "../logger.ts";
import { checkOptions, describeFailure, type MessagesCapability, type MessagesStreamEvent, type ModelInstance } from "../plugin-sdk/index.ts";
import { testPluginContext } from "@reelay/plugin-sdk/testing";
import anthropic from "../../plugins/anthropic/index.ts";
import { fakeInputTokens, startFakeAnthropic } from "../../test/fakes/anthropic-upstream.ts";
import { checkedInstance } from "./checked-instance.ts";
import { MessagesStreamUsage, reportedMessagesUsage } from "./checked-messages.ts";
import { PluginSecrets } from "./secrets.ts";
import type { HostMessagesCall } from "./types.ts";

const fake = await startFakeAnthropic();
afterAll(() => fake.stop());

const lines: string[] = [];
const logger = createLogger({ logLevel: "error", logPretty: false }, new Writable({ write(c, _e, done) { lines.push(String(c)); done(); } }));
const site = (secrets?: PluginSecrets) => ({ plugin: "p", model: "m", logger, secrets, allowPrivateNetwork: false, download: async () => ({ bytes: new Uint8Array() }) });
const call = (over: Partial<HostMessagesCall> = {}): HostMessagesCall => ({ signal: new AbortController().signal, requestId: "req_1", ...over });
const body = { model: "m", max_tokens: 8, messages: [{ role: "user", content: [{ type: "text", text: "Hi", cache_control: { type: "ephemeral" } }] }] };

function realInstance() {
  const options = checkOptions(anthropic.options!, { baseUrl: fake.url, apiKeyEnv: "K", upstreamModel: "claude-up" }).options;
  return checkedInstance(anthropic.create(testPluginContext(options, { envVars: { K: fake.apiKey } }) as never) as ModelInstance, site());
}

describe("the anthropic plugin's messages capability, as a route calls it", () => {
  test("create: the client's anthropic-version and anthropic-beta reach the upstream; the usage is read as every prompt token with the cache parts", async () => {
    fake.behave({ cacheRead: 2, cacheWrite: 1 });
    const host = realInstance();
    const r = await host.messages!.create(body, call({ anthropicVersion: "2026-10-21", anthropicBeta: ["prompt-caching-2024-07-31"] }));
    expect(fake.requests.at(-1)!.headers).toMatchObject({ "anthropic-version": "2026-10-21", "anthropic-beta": "prompt-caching-2024-07-31" });
    expect(fake.requests.at(-1)!.body.messages).toEqual(body.messages);
    const prompt = fakeInputTokens(body);
    expect(reportedMessagesUsage(r.upstreamUsage)).toEqual({ prompt, completion: 8, cached: 2, cacheWrite: 1 });
  });

  test("stream: checked events pass; MessagesStreamUsage reads message_start and message_delta into the same numbers", async () => {
    fake.behave({ cacheRead: 3, tokens: 8 });
    const usage = new MessagesStreamUsage();
    const events: MessagesStreamEvent[] = [];
    for await (const e of await realInstance().messages!.stream!({ ...body, stream: true }, call())) {
      usage.observe(e.json);
      events.push(e);
    }
    expect(events[0]!.event).toBe("message_start");
    expect(events.at(-1)!.event).toBe("message_stop");
    expect(usage.reported()).toEqual({ prompt: fakeInputTokens(body), completion: 8, cached: 3, cacheWrite: 0 });
  });

  test("hostile usage is judged where it is billed: cache counts beyond the prompt are not billed at cache prices", () => {
    const reported = reportedMessagesUsage({ input_tokens: 10, output_tokens: 2, cache_read_input_tokens: -50, cache_creation_input_tokens: 1 });
    expect(reported).toEqual({ prompt: 11, completion: 2, cached: -50, cacheWrite: 1 });
    const prompt = credibleCount("prompt_tokens", reported.prompt, { local: 10, max: 1_000 });
    expect(credibleCacheCounts(reported, prompt)).toEqual({ cached: 0, cacheWrite: 1, anomaly: expect.stringMatching(/cached_tokens: upstream reported -50/) });
    expect(new MessagesStreamUsage().reported()).toBeNull();
  });
});

describe("a plugin that breaks the Messages rules", () => {
  const broken = (messages: MessagesCapability, secrets?: PluginSecrets) =>
    checkedInstance({ chat: { complete: async () => ({ completion: {} as never }) }, messages }, site(secrets));
  const failure = async (p: Promise<unknown>) => describeFailure(await p.then(() => null, (e) => e));
  const events = async function* (...list: unknown[]) {
    for (const e of list) yield e as MessagesStreamEvent;
  };

  test("a create() result that is not a message, a bad event, a count that is not one: 502 invalid_plugin_result naming the problem", async () => {
    const notMessage = await failure(broken({ create: async () => ({ message: { type: "chat.completion" } as never }) }).messages!.create(body, call()));
    expect(notMessage).toMatchObject({ status: 502, code: "invalid_plugin_result", message: expect.stringContaining('of type "chat.completion"') });
    const cap = { create: async () => ({ message: null as never }), stream: async () => events({ event: "message_stop", data: '{"type":"ping"}', json: { type: "ping" } }), countTokens: async () => ({ input_tokens: "12" as never }) };
    const streamed = await failure((async () => { for await (const _ of await broken(cap).messages!.stream!(body, call())); })());
    expect(streamed).toMatchObject({ status: 502, code: "invalid_plugin_result", message: expect.stringContaining('named "message_stop" carries type "ping"') });
    expect(await failure(broken(cap).messages!.countTokens!(body, call()))).toMatchObject({ status: 502, code: "invalid_plugin_result", message: expect.stringContaining('input_tokens "12"') });
    expect(lines.join("")).toContain("plugin returned an invalid result");
  });

  test("a secret the plugin read from the environment is masked in every event it streams", async () => {
    const secrets = new PluginSecrets();
    secrets.note("sk-ant-secret-value-123");
    const leak = { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "key: sk-ant-secret-value-123" } };
    const host = broken({ create: async () => ({ message: null as never }), stream: async () => events({ event: "content_block_delta", data: JSON.stringify(leak), json: leak }) }, secrets);
    const out: MessagesStreamEvent[] = [];
    for await (const e of await host.messages!.stream!(body, call())) out.push(e);
    expect(out[0]!.data).not.toContain("sk-ant-secret-value-123");
    expect((out[0]!.json as any).delta.text).toBe("key: [redacted]");
  });
});
