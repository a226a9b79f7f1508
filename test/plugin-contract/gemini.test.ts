/**
 * The gemini plugin through the SDK's contract, chat and embeddings, with every failure the
 * contract asks for made real by the fake Gemini API (test/fakes/gemini.ts): HTTP statuses in
 * Google's error shape, a server that is gone (restarted on the same port afterwards), one that
 * never answers, HTML instead of JSON, a stream reset after two chunks, and slow streams whose
 * abort must reach the server.
 */
import { runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/gemini/index.ts";
import { startFakeGemini, type FakeGemini } from "../fakes/gemini.ts";
import { realHost } from "../support/plugin-context.ts";

let fake: FakeGemini;
let stopped = false;
const failures: FailureScenarios = {
  httpStatus: (status) => fake.behave({ status, errorMessage: `fake Gemini answered ${status}` }),
  unreachable: async () => {
    stopped = true;
    await fake.stop();
  },
  hang: () => fake.behave({ hang: true }),
  shortTimeouts: { timeouts: { connectMs: 300, totalMs: 300 } },
  garbage: () => fake.behave({ garbageBody: "<html><body>502 Bad Gateway</body></html>" }),
  breakMidStream: () => fake.behave({ resetAfterChunks: 2, tokens: 16 }),
  slowStream: () => fake.behave({ delayBetweenChunksMs: 150, tokens: 16 }),
  sawAbort: () => fake.aborts > 0,
  reset: async () => {
    if (stopped) fake = await startFakeGemini({ port: fake.port, behaviour: { tokens: 4 } });
    stopped = false;
    fake.reset();
    fake.behave({ tokens: 4 });
  },
};

runPluginContract("gemini (chat + embeddings)", () => plugin, {
  capabilities: ["chat", "embeddings"],
  setup: async () => {
    fake = await startFakeGemini({ behaviour: { tokens: 4 } });
  },
  teardown: () => fake.stop(),
  options: () => ({ baseUrl: fake.url, apiKeyEnv: "CONTRACT_GEMINI_KEY", upstreamModel: "gemini-contract", capabilities: ["chat", "embeddings"] }),
  ctx: realHost({ envVars: { CONTRACT_GEMINI_KEY: "AIza-fake-gemini-0123456789" } }),
  failures,
});
