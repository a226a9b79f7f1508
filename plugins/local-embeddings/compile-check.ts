/**
 * Proves the plugin works inside `bun build --compile` with nothing on disk: weights, vocabulary
 * and wasm come from the binary. Prints token counts, the first 8 dimensions and a hash of all 512
 * floats of two sentences; run it under `bun` and as a compiled binary from an empty directory and
 * compare stdout (stderr says where model.json was read from: /$bunfs/... when compiled).
 *
 *   bun build --compile --outfile /tmp/embcheck plugins/local-embeddings/compile-check.ts
 *   cd "$(mktemp -d)" && /tmp/embcheck
 */
import plugin from "./index.ts";
import { embeddedModelFiles } from "./embedded-assets.ts";
import type { PluginContext } from "../../src/plugin-sdk/index.ts";

const log = (msg: string, fields?: Record<string, unknown>) => console.error(msg, fields ?? "");
const unused = () => Promise.reject(new Error("not available in compile-check"));
const ctx = {
  modelId: "use-lite",
  options: { backend: "wasm" },
  model: { pricing: { inputPerMillion: 20_000 } },
  logger: { debug: log, info: log, warn: log, error: log },
  env: (name: string) => process.env[name],
  fetch: unused,
  safeFetchBytes: unused,
  host: { decodeImage: unused, encodeMp4: unused, countTokens: (text: string) => text.length },
} as unknown as PluginContext;

const model = await plugin.create(ctx);
await model.load!({ signal: new AbortController().signal });
const inputs = ["How old are you?", "What is your age?"];
const { data, usage } = await model.embeddings!.embed({ body: {}, inputs }, { signal: new AbortController().signal });
console.log(JSON.stringify({ usage, tokens: model.embeddings!.countTokens!(inputs) }));
for (const { index, embedding } of data) {
  const v = embedding as Float32Array;
  const sha256 = new Bun.CryptoHasher("sha256").update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).digest("hex");
  console.log(index, Array.from(v.slice(0, 8), (x) => x.toFixed(7)).join(" "), `sha256(all 512 floats)=${sha256.slice(0, 16)}`);
}
console.error("model.json read from", embeddedModelFiles.modelJson);
await model.close?.();
