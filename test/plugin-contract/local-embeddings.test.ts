import { runPluginContract } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/local-embeddings/index.ts";
import { realHost } from "../support/plugin-context.ts";

runPluginContract("local-embeddings", () => plugin, { capabilities: ["embeddings"], options: { backend: "wasm" }, ctx: realHost() });
