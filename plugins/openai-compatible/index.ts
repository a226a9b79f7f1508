/**
 * openai-compatible: pass-through chat (and optionally embeddings) to any OpenAI-compatible
 * upstream (vLLM, Ollama, llama.cpp server, OpenAI). The body goes upstream unchanged except
 * `model` (→ upstreamModel) and, for streams, `stream_options` (usage forced on); answers come back
 * as the upstream gave them. Options: see options.ts.
 */
import {
  PLUGIN_API_VERSION, PluginError,
  type ChatCapability, type EmbeddingsCapability, type ModelInstance, type PluginContext, type ReelayPlugin, type TokenUsage,
} from "../../src/plugin-sdk/index.ts";
import { DEFAULT_MAX_RESPONSE_BYTES, parseOptions, validateOptions, type OpenAICompatibleOptions } from "./options.ts";
import { redactor, urlPassword, type Redact } from "./redact.ts";
import { sseEvents } from "./sse.ts";
import { UpstreamCall } from "./upstream-call.ts";

export { estimatePromptTokens, countTextTokens } from "./tokens.ts";
export type { OpenAICompatibleOptions } from "./options.ts";

export default {
  name: "openai-compatible",
  apiVersion: PLUGIN_API_VERSION,
  validateOptions,
  create(ctx: PluginContext): ModelInstance {
    const opts = parseOptions(ctx.options);
    const headers = requestHeaders(ctx, opts);
    const model = opts.upstreamModel ?? ctx.modelId;
    const redact = redactor([opts.apiKeyEnv ? ctx.env(opts.apiKeyEnv) : undefined, urlPassword(opts.baseUrl)]);
    return {
      chat: opts.capabilities.includes("chat") ? chat(ctx, opts, headers, model, redact) : undefined,
      embeddings: opts.capabilities.includes("embeddings") ? embeddings(ctx, opts, headers, model, redact) : undefined,
    };
  },
} satisfies ReelayPlugin;

function requestHeaders(ctx: PluginContext, opts: OpenAICompatibleOptions): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.apiKeyEnv) {
    const key = ctx.env(opts.apiKeyEnv);
    if (key) headers.authorization = `Bearer ${key}`;
    else ctx.logger.warn("apiKeyEnv names an unset environment variable; calling upstream without a key", { model: ctx.modelId, apiKeyEnv: opts.apiKeyEnv });
  }
  return headers;
}

function chat(ctx: PluginContext, opts: OpenAICompatibleOptions, headers: Record<string, string>, model: string, redact: Redact): ChatCapability {
  const url = `${opts.baseUrl}/chat/completions`;
  const jsonHeaders = { ...headers, accept: "application/json" };
  const sseHeaders = { ...headers, accept: "text/event-stream" };
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.chat;
  return {
    async complete(body, { signal }) {
      const call = new UpstreamCall(signal, opts.timeouts, redact);
      try {
        // No connect / first-byte deadline here: a non-streamed upstream sends its headers only
        // when the whole completion is done, so only totalMs bounds the wait.
        const res = await call.post(ctx, url, { ...body, model }, jsonHeaders);
        const completion = parseJson(redact(await readAll(call, res, maxBytes)), "completion");
        return { completion, usage: tokenUsage(completion?.usage) };
      } finally {
        call.finish();
      }
    },

    async stream(body, { signal }) {
      const call = new UpstreamCall(signal, opts.timeouts, redact);
      const stream_options = {
        ...(isObject(body.stream_options) ? body.stream_options : {}),
        include_usage: true,
        ...(opts.continuousUsageStats ? { continuous_usage_stats: true } : {}),
      };
      try {
        call.arm("connect");
        const res = await call.post(ctx, url, { ...body, model, stream: true, stream_options }, sseHeaders);
        const type = res.headers.get("content-type") ?? "";
        if (!type.startsWith("text/event-stream")) {
          throw new PluginError("malformed", `upstream answered a stream request with content-type ${JSON.stringify(type)}, not text/event-stream`);
        }
        return relay(call, res, opts.limits.maxEventBytes, redact);
      } catch (err) {
        call.finish();
        throw err;
      }
    },
  };
}

async function* relay(call: UpstreamCall, res: Response, maxEventChars: number, redact: Redact) {
  try {
    yield* sseEvents(call.chunks(res, "first byte"), { maxEventChars, redact });
  } finally {
    call.finish(); // also runs when the consumer stops early: the upstream request is aborted
  }
}

function embeddings(ctx: PluginContext, opts: OpenAICompatibleOptions, headers: Record<string, string>, model: string, redact: Redact): EmbeddingsCapability {
  const url = `${opts.baseUrl}/embeddings`;
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.embeddings;
  return {
    supportsDimensions: true,
    async embed({ body, inputs }, { signal }) {
      const call = new UpstreamCall(signal, opts.timeouts, redact);
      try {
        const res = await call.post(ctx, url, { ...body, model }, { ...headers, accept: "application/json" });
        const json = parseJson(redact(await readAll(call, res, maxBytes)), "embeddings");
        if (!Array.isArray(json?.data)) throw new PluginError("malformed", "upstream embeddings answer has no data array");
        const data = json.data.map((d: any, i: number) => ({ index: typeof d?.index === "number" ? d.index : i, embedding: d?.embedding }));
        // Some servers (older llama.cpp) omit usage; bill by reelay's own count then.
        const reported = tokenUsage(json.usage);
        const prompt = reported?.prompt_tokens ?? inputs.reduce((n, s) => n + ctx.host.countTokens(s), 0);
        return { data, usage: { prompt_tokens: prompt, total_tokens: reported?.total_tokens ?? prompt } };
      } finally {
        call.finish();
      }
    },
  };
}

/**
 * An answer that declares a Content-Length up to this is read in one res.text() under one "idle"
 * deadline: it cannot outgrow its declared length, and reading it through a JS stream reader costs
 * ~8 µs more CPU per chat request (Bun materialises the body as a ReadableStream). 64 KB is far
 * beyond a usual completion and arrives well within the 30 s idle deadline even from a slow server.
 */
const ONE_READ_BYTES = 64 * 1024;

/** The whole answer as text, stopping at `maxBytes`: past it the upstream request is aborted and the call fails (502). */
async function readAll(call: UpstreamCall, res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw tooLargeAnswer(maxBytes);
  if (declared > 0 && declared <= ONE_READ_BYTES) return call.text(res);
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  for await (const chunk of call.chunks(res, "idle")) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) throw tooLargeAnswer(maxBytes);
    parts.push(decoder.decode(chunk, { stream: true }));
  }
  return parts.join("") + decoder.decode();
}

const tooLargeAnswer = (maxBytes: number) =>
  new PluginError("malformed", `upstream answer is larger than ${maxBytes} bytes (the model's limits.maxResponseBytes)`);

function parseJson(text: string, what: string): any {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PluginError("malformed", `upstream ${what} is not JSON: ${JSON.stringify(text.slice(0, 80))}`, { cause: err });
  }
}

/**
 * The upstream's counts as it sent them: the host decides whether they are credible and bills its
 * own count otherwise (src/billing/usage-sanity.ts). Coercing here hid bad numbers: a string
 * completion count became 0, i.e. free output.
 */
function tokenUsage(u: any): TokenUsage | undefined {
  if (!isObject(u) || (u.prompt_tokens === undefined && u.completion_tokens === undefined)) return undefined;
  return { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens } as TokenUsage;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
