/**
 * openai-compatible through the SDK's contract, with every failure the contract knows how to ask
 * for made real by the fake upstream (test/fakes/openai-upstream.ts): HTTP statuses, a server that
 * is gone (restarted on the same port afterwards), one that never answers, HTML instead of JSON,
 * a stream cut after two chunks, and slow streams whose abort must reach the server.
 */
import { runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/openai-compatible/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { realHost } from "../support/plugin-context.ts";

function scenarios(get: () => FakeOpenAI, set: (f: FakeOpenAI) => void): FailureScenarios {
  let stopped = false;
  return {
    httpStatus: (status) => get().behave({ status, errorMessage: `fake upstream answered ${status}` }),
    unreachable: async () => {
      stopped = true;
      await get().stop();
    },
    hang: () => get().behave({ hang: true }),
    shortTimeouts: { timeouts: { connectMs: 300, totalMs: 300 } },
    garbage: () => get().behave({ garbageBody: "<html><body>502 Bad Gateway</body></html>" }),
    breakMidStream: () => get().behave({ dropAfterChunks: 2, tokens: 16 }),
    slowStream: () => get().behave({ delayBetweenChunksMs: 150, tokens: 16 }),
    sawAbort: () => get().aborts.length > 0,
    reset: async () => {
      if (stopped) set(await startFakeOpenAI({ tokens: 4, port: get().port }));
      stopped = false;
      get().reset();
    },
  };
}

for (const capabilities of [["chat"], ["chat", "embeddings"]] as const) {
  let fake: FakeOpenAI;
  runPluginContract(`openai-compatible (${capabilities.join(" + ")})`, () => plugin, {
    capabilities: [...capabilities],
    setup: async () => { fake = await startFakeOpenAI({ tokens: 4 }); },
    teardown: () => fake.stop(),
    options: () => ({ baseUrl: fake.url, capabilities }),
    ctx: realHost(),
    failures: scenarios(() => fake, (f) => (fake = f)),
  });
}
