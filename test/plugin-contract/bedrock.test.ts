/**
 * The bedrock plugin through the SDK's contract, through the real AWS SDK, with every failure the
 * contract asks for made real by the fake Bedrock runtime (test/fakes/bedrock.ts): HTTP statuses
 * as Bedrock's exceptions, a server that is gone (restarted on the same port afterwards), one that
 * never answers, HTML instead of JSON or event-stream frames, a stream reset after two deltas, and
 * slow streams whose abort must reach the server.
 */
import { runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/bedrock/index.ts";
import { FAKE_AWS, startFakeBedrock, type FakeBedrock } from "../fakes/bedrock.ts";
import { realHost } from "../support/plugin-context.ts";

let fake: FakeBedrock;
let stopped = false;
const failures: FailureScenarios = {
  httpStatus: (status) => fake.behave({ status, errorMessage: `fake Bedrock answered ${status}` }),
  unreachable: async () => {
    stopped = true;
    await fake.stop();
  },
  hang: () => fake.behave({ hang: true }),
  shortTimeouts: { timeouts: { connectMs: 300, totalMs: 300 } },
  garbage: () => fake.behave({ garbageBody: "<html><body>502 Bad Gateway</body></html>" }),
  breakMidStream: () => fake.behave({ resetAfterDeltas: 2, tokens: 16 }),
  slowStream: () => fake.behave({ delayBetweenEventsMs: 150, tokens: 16 }),
  sawAbort: () => fake.aborts > 0,
  reset: async () => {
    if (stopped) fake = await startFakeBedrock({ port: fake.port });
    stopped = false;
    fake.reset();
    fake.behave({ tokens: 4 });
  },
};

runPluginContract("bedrock (chat)", () => plugin, {
  capabilities: ["chat"],
  setup: async () => {
    fake = await startFakeBedrock({ behaviour: { tokens: 4 } });
  },
  teardown: () => fake.stop(),
  options: () => ({ baseUrl: fake.url, region: "us-west-2", upstreamModel: "amazon.nova-lite-v1:0" }),
  ctx: realHost({ envVars: { AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId, AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey } }),
  failures,
});
