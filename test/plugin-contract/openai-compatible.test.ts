import plugin from "../../plugins/openai-compatible/index.ts";
import { startFakeOpenAI } from "../fakes/openai-upstream.ts";
import { runPluginContract } from "./run-plugin-contract.ts";

let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;

runPluginContract("openai-compatible (chat)", () => plugin, {
  capabilities: ["chat"],
  setup: async () => { fake = await startFakeOpenAI({ tokens: 4 }); },
  teardown: () => fake.stop(),
  options: () => ({ baseUrl: fake.url }),
});

let fake2: Awaited<ReturnType<typeof startFakeOpenAI>>;

runPluginContract("openai-compatible (chat + embeddings)", () => plugin, {
  capabilities: ["chat", "embeddings"],
  setup: async () => { fake2 = await startFakeOpenAI({ tokens: 4 }); },
  teardown: () => fake2.stop(),
  options: () => ({ baseUrl: fake2.url, capabilities: ["chat", "embeddings"] }),
});
