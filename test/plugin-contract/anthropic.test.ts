/**
 * The anthropic plugin through the SDK's contract, chat and the native Messages capability, with
 * every failure the contract asks for made real by the fake Anthropic API
 * (test/fakes/anthropic-upstream.ts): HTTP statuses with Anthropic's error bodies, a server that is
 * gone (restarted on the same port afterwards), one that never answers, HTML instead of JSON, a
 * stream reset after two deltas, and slow streams whose abort must reach the server.
 */
import { runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/anthropic/index.ts";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-upstream.ts";
import { realHost } from "../support/plugin-context.ts";

let fake: FakeAnthropic;
let stopped = false;
const failures: FailureScenarios = {
  httpStatus: (status) => fake.behave({ status, errorMessage: `fake Anthropic answered ${status}` }),
  unreachable: async () => {
    stopped = true;
    await fake.stop();
  },
  hang: () => fake.behave({ hang: true }),
  shortTimeouts: { timeouts: { connectMs: 300, totalMs: 300 } },
  garbage: () => fake.behave({ garbageBody: "<html><body>502 Bad Gateway</body></html>" }),
  breakMidStream: () => fake.behave({ resetAfterDeltas: 2, tokens: 16 }),
  slowStream: () => fake.behave({ delayBetweenEventsMs: 150, tokens: 16 }),
  sawAbort: () => fake.aborts.length > 0,
  reset: async () => {
    if (stopped) fake = await startFakeAnthropic({ port: fake.port });
    stopped = false;
    fake.reset();
  },
};

runPluginContract("anthropic (chat + native messages)", () => plugin, {
  capabilities: ["chat"],
  messages: {},
  setup: async () => {
    fake = await startFakeAnthropic({ behaviour: { tokens: 4 } });
  },
  teardown: () => fake.stop(),
  options: () => ({ baseUrl: fake.url, apiKeyEnv: "CONTRACT_ANTHROPIC_KEY", upstreamModel: "claude-contract" }),
  ctx: realHost({ envVars: { CONTRACT_ANTHROPIC_KEY: "sk-ant-fake-0123456789abcdef" } }),
  failures,
});
