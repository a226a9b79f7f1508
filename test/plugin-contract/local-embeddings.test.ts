import plugin from "../../plugins/local-embeddings/index.ts";
import { runPluginContract } from "./run-plugin-contract.ts";

runPluginContract("local-embeddings", () => plugin, { capabilities: ["embeddings"], options: { backend: "wasm" } });
