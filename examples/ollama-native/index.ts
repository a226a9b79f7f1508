/**
 * ollama-native: a reelay plugin for Ollama's own API (not its OpenAI-compatible /v1): chat through
 * /api/chat, whose stream is newline-delimited JSON, and embeddings through /api/embed.
 * Built from @reelay/plugin-sdk alone (docs/writing-a-plugin.md walks through it):
 *
 *   bun build index.ts --outfile dist/ollama-native.js --target bun --format esm
 *
 * Models file entry:
 *   { "id": "llama3.2", "plugin": "ollama-native", "options": { "baseUrl": "http://127.0.0.1:11434", "model": "llama3.2:3b" },
 *     "pricing": { "inputPerMillion": 100000, "outputPerMillion": 200000 }, "maxOutputTokens": 2048 }
 */
import { callUpstream, chatChunks, definePlugin, PluginError, Type, type CallOptions, type ChatCapability, type EmbeddingsCapability, type PluginContext, type Static } from "@reelay/plugin-sdk";
import { completionOf, finishReason, lineProblem, toolCalls, usageOf, type OllamaChatLine } from "./from-ollama.ts";
import { toOllamaChat } from "./to-ollama.ts";

const Options = Type.Object({
  baseUrl: Type.String({ pattern: "^https?://[^?#]+$", description: 'where Ollama listens, e.g. "http://127.0.0.1:11434"' }),
  /** the Ollama model name; default: the reelay model id */
  model: Type.Optional(Type.String({ minLength: 1 })),
  /** Ollama's keep_alive, e.g. "10m" */
  keepAlive: Type.Optional(Type.String()),
  capabilities: Type.Array(Type.Union([Type.Literal("chat"), Type.Literal("embeddings")]), { minItems: 1, default: ["chat"] }),
  /** Ollama loads a model on its first request (seconds to minutes), then answers: generous deadlines */
  timeouts: Type.Object({
    connectMs: Type.Integer({ minimum: 1, default: 120_000 }),
    firstByteMs: Type.Integer({ minimum: 1, default: 120_000 }),
    idleMs: Type.Integer({ minimum: 1, default: 60_000 }),
    totalMs: Type.Integer({ minimum: 1, default: 600_000 }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false });
type Options = Static<typeof Options>;

export default definePlugin({
  name: "ollama-native",
  options: Options,
  create(ctx) {
    const o = ctx.options;
    return {
      chat: o.capabilities.includes("chat") ? chat(ctx) : undefined,
      embeddings: o.capabilities.includes("embeddings") ? embeddings(ctx) : undefined,
    };
  },
});

const base = (ctx: PluginContext<Options>) => ctx.options.baseUrl.replace(/\/+$/, "");
const upstream = (ctx: PluginContext<Options>) => ({ timeouts: ctx.options.timeouts, fetch: ctx.fetch });

function chat(ctx: PluginContext<Options>): ChatCapability {
  const url = `${base(ctx)}/api/chat`;
  const model = ctx.options.model ?? ctx.modelId;
  return {
    async complete(body, call) {
      const res = await callUpstream({ url, json: toOllamaChat(body, model, ctx.options.keepAlive, false) }, call, upstream(ctx));
      const line = await res.json<OllamaChatLine>();
      const problem = lineProblem(line, false);
      if (problem) throw problem;
      const completion = completionOf(line, ctx.modelId);
      // Ollama's counts are the upstream's report: reelay bills them when credible, its own count otherwise
      return { completion, upstreamUsage: usageOf(line) };
    },

    async stream(body, call) {
      const res = await callUpstream({ url, json: toOllamaChat(body, model, ctx.options.keepAlive, true), stream: true }, call, upstream(ctx));
      return events(res.ndjson<OllamaChatLine>(), ctx.modelId, call);
    },
  };
}

/**
 * NDJSON lines → OpenAI chunks. The role goes out with the first content, not before: reelay
 * answers 200 on the first event, and a failure before it should still be a real status.
 */
async function* events(lines: AsyncIterable<OllamaChatLine>, model: string, call: CallOptions) {
  const out = chatChunks({ model });
  let started = false;
  let calls = 0;
  for await (const line of lines) {
    const problem = lineProblem(line, started);
    if (problem) throw problem;
    if (!started) {
      started = true;
      yield out.role();
    }
    const text = line.message?.content ?? "";
    if (text) yield out.delta(text);
    for (const c of toolCalls(line)) yield out.toolCall({ index: calls++, id: c.id, type: "function", function: c.function });
    if (line.done) {
      yield out.finish(finishReason(line, calls));
      const usage = usageOf(line);
      if (usage) yield out.usage(usage);
      yield out.done();
      return;
    }
  }
  // the body ended without Ollama's `done: true` line
  call.logger.warn("Ollama's stream ended without its final line");
  throw started ? new PluginError("stream_interrupted", "Ollama's stream ended before its final line") : new PluginError("malformed", "Ollama answered an empty stream");
}

function embeddings(ctx: PluginContext<Options>): EmbeddingsCapability {
  const url = `${base(ctx)}/api/embed`;
  const model = ctx.options.model ?? ctx.modelId;
  return {
    supportsDimensions: false,
    async embed({ body, inputs }, call) {
      if (!inputs.length) throw new PluginError("invalid_request", "this model takes text input, not token ids", { param: "input" });
      const res = await callUpstream({ url, json: { model, input: inputs, ...(ctx.options.keepAlive ? { keep_alive: ctx.options.keepAlive } : {}) } }, call, upstream(ctx));
      const json = await res.json<{ embeddings?: unknown; prompt_eval_count?: unknown; error?: string }>(128 * 1024 * 1024);
      if (!Array.isArray(json?.embeddings) || json.embeddings.length !== inputs.length || !json.embeddings.every((e) => Array.isArray(e))) {
        throw new PluginError("malformed", `Ollama answered /api/embed without one embedding per input (model ${String(body.model)})`);
      }
      return { data: json.embeddings.map((embedding: number[], index: number) => ({ index, embedding })), upstreamUsage: { prompt_tokens: json.prompt_eval_count } };
    },
  };
}
