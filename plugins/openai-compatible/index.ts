/**
 * openai-compatible: pass-through chat (and optionally embeddings) to any OpenAI-compatible
 * upstream (vLLM, Ollama's /v1, llama.cpp server, OpenAI). The body goes upstream unchanged except
 * `model` (→ upstreamModel) and, for streams, `stream_options` (usage forced on); answers come back
 * as the upstream gave them, its usage report relayed as `upstreamUsage` for the host to judge.
 * Options: options.ts. Deadlines, retries of refused connections and error mapping: the SDK's
 * callUpstream.
 */
import {
  callUpstream, definePlugin, PluginError,
  type CallOptions, type ChatCapability, type ChatCompletion, type EmbeddingsCapability, type PluginContext, type UpstreamOptions,
} from "@reelay/plugin-sdk";
import { DEFAULT_MAX_RESPONSE_BYTES, OpenAICompatibleOptions, validateOptions } from "./options.ts";
import { redactor, urlPassword } from "./redact.ts";

export type { OpenAICompatibleOptions } from "./options.ts";

export default definePlugin({
  name: "openai-compatible",
  options: OpenAICompatibleOptions,
  validateOptions,
  create(ctx) {
    const opts = { ...ctx.options, baseUrl: ctx.options.baseUrl.replace(/\/+$/, "") };
    const headers = requestHeaders(ctx, opts);
    const model = opts.upstreamModel ?? ctx.modelId;
    const upstream: UpstreamOptions = {
      timeouts: opts.timeouts,
      fetch: ctx.fetch,
      redact: redactor([opts.apiKeyEnv ? ctx.env(opts.apiKeyEnv) : undefined, urlPassword(opts.baseUrl)]),
    };
    return {
      chat: opts.capabilities.includes("chat") ? chat(opts, headers, model, upstream) : undefined,
      embeddings: opts.capabilities.includes("embeddings") ? embeddings(opts, headers, model, upstream) : undefined,
    };
  },
});

function requestHeaders(ctx: PluginContext<OpenAICompatibleOptions>, opts: OpenAICompatibleOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  if (opts.apiKeyEnv) {
    const key = ctx.env(opts.apiKeyEnv);
    if (key) headers.authorization = `Bearer ${key}`;
    else ctx.logger.warn("apiKeyEnv names an unset environment variable; calling upstream without a key", { apiKeyEnv: opts.apiKeyEnv });
  }
  return headers;
}

function chat(opts: OpenAICompatibleOptions, headers: Record<string, string>, model: string, upstream: UpstreamOptions): ChatCapability {
  const url = `${opts.baseUrl}/chat/completions`;
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.chat;
  return {
    async complete(body, call) {
      const res = await callUpstream({ url, json: { ...body, model }, headers: { ...headers, accept: "application/json" } }, call, upstream);
      const completion = await res.json<ChatCompletion>(maxBytes);
      if (typeof completion !== "object" || completion === null || !Array.isArray(completion.choices)) throw new PluginError("malformed", "upstream completion has no choices array");
      // the upstream's numbers as it sent them: the host bills them when credible, its own count otherwise
      return { completion, upstreamUsage: completion.usage };
    },

    async stream(body, call) {
      const stream_options = {
        ...(isObject(body.stream_options) ? body.stream_options : {}),
        include_usage: true,
        ...(opts.continuousUsageStats ? { continuous_usage_stats: true } : {}),
      };
      const res = await callUpstream({ url, json: { ...body, model, stream: true, stream_options }, headers: { ...headers, accept: "text/event-stream" }, stream: true }, call, upstream);
      const type = res.headers.get("content-type") ?? "";
      if (!type.startsWith("text/event-stream")) {
        res.close();
        throw new PluginError("malformed", `upstream answered a stream request with content-type ${JSON.stringify(type)}, not text/event-stream`);
      }
      return res.sse({ maxEventBytes: opts.limits.maxEventBytes });
    },
  };
}

function embeddings(opts: OpenAICompatibleOptions, headers: Record<string, string>, model: string, upstream: UpstreamOptions): EmbeddingsCapability {
  const url = `${opts.baseUrl}/embeddings`;
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.embeddings;
  return {
    supportsDimensions: true,
    async embed({ body }, call: CallOptions) {
      const res = await callUpstream({ url, json: { ...body, model }, headers: { ...headers, accept: "application/json" } }, call, upstream);
      const json = await res.json<{ data?: unknown; usage?: unknown }>(maxBytes);
      if (!Array.isArray(json?.data)) throw new PluginError("malformed", "upstream embeddings answer has no data array");
      const data = json.data.map((d: any, i: number) => {
        if (!Array.isArray(d?.embedding) && typeof d?.embedding !== "string") throw new PluginError("malformed", `upstream embeddings answer: data[${i}] has no embedding`);
        return { index: typeof d.index === "number" ? d.index : i, embedding: d.embedding };
      });
      // some servers (older llama.cpp) omit usage: the host then bills its own count
      return { data, upstreamUsage: json.usage };
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
