import { runPluginContract } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/local-llm/index.ts";
import { realHost } from "../support/plugin-context.ts";

// the embedded stories260K (no modelPath), as `npm start` serves it
runPluginContract("local-llm", () => plugin, {
  capabilities: ["chat"],
  options: { contextSize: 512, parallel: 2, threads: 1 },
  ctx: realHost(),
  chat: { body: { messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8 } },
});
