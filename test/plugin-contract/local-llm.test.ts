import plugin from "../../plugins/local-llm/index.ts";
import { runPluginContract } from "./run-plugin-contract.ts";

// the embedded stories260K (no modelPath), as `npm start` serves it
runPluginContract("local-llm", () => plugin, {
  capabilities: ["chat"],
  options: { contextSize: 512, parallel: 2, threads: 1 },
  chat: { body: { model: "contract", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8 } },
});
