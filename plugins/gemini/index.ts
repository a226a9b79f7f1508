/**
 * gemini: Google's Gemini API (generativelanguage.googleapis.com) natively — what its
 * OpenAI-compatible face leaves out: cached-content and thinking token counts, thought summaries,
 * safety blocks, function calls with their thought signatures.
 *
 * - `chat`: OpenAI chat → `models/{model}:generateContent` / `:streamGenerateContent?alt=sse`
 *   (to-gemini.ts) and back (from-gemini.ts); usage relayed as `upstreamUsage` for the host to
 *   judge and bill, cache reads at the model's `cachedInputPerMillion`
 * - `embeddings`: `:embedContent` for one input, `:batchEmbedContents` (100 per call) for more
 * The key goes in `x-goog-api-key`. Several deployments (`deployments`): the SDK's UpstreamRouter
 * and routedCall, as openai-compatible — a 429 RESOURCE_EXHAUSTED (its RetryInfo delay becomes
 * the client's Retry-After and the deployment's breaker wait), a 5xx (503 UNAVAILABLE: "the model
 * is overloaded"), a reset or a deadline before the first chunk moves to another deployment.
 */
import {
  callUpstream, DEFAULT_BREAKER, definePlugin, deploymentNames, isPluginError, isSafeFetchError, leasedStream, PluginError, redactor, retryableBeforeFirstEvent, routedCall, UpstreamRouter, urlPassword,
  type CallOptions, type ChatCapability, type EmbeddingsCapability, type PluginContext, type RetryBudget, type UpstreamOptions, type UpstreamResponse,
} from "@reelay/plugin-sdk";
import { toChatCompletion, toChatStream, type GenerateResponse } from "./from-gemini.ts";
import { DEFAULT_BASE_URL, DEFAULT_KEY_ENV, GeminiOptions, validateOptions } from "./options.ts";
import { toGenerateRequest, type TranslateOptions } from "./to-gemini.ts";

export type { GeminiOptions } from "./options.ts";

/** batchEmbedContents takes at most 100 requests */
const EMBED_BATCH = 100;

export default definePlugin({
  name: "gemini",
  options: GeminiOptions,
  validateOptions,
  create(ctx) {
    const opts = ctx.options;
    const targets = deploymentTargets(ctx, opts);
    const single = opts.deployments === undefined;
    const router = new UpstreamRouter(targets, single ? { ...DEFAULT_BREAKER, enabled: false } : opts.routing.breaker);
    const upstream: UpstreamOptions = {
      timeouts: opts.timeouts,
      fetch: ctx.fetch,
      redact: redactor(targets.flatMap((t) => t.target.secrets)),
      ...(targets.length > 1 ? { retryRefusedMs: [] } : {}),
    };
    const route: Route = { router, budget: opts.routing, upstream, opts };
    const translate: TranslateOptions = {
      thinking: opts.thinking, reasoningBudgets: opts.reasoningBudgets, includeThoughts: opts.includeThoughts, safetySettings: opts.safetySettings,
      fetchImage: (url, param) => fetchImage(ctx, opts, url, param),
    };
    return {
      chat: opts.capabilities.includes("chat") ? chat(ctx.modelId, route, translate) : undefined,
      embeddings: opts.capabilities.includes("embeddings") ? embeddings(route) : undefined,
      upstreams: () => router.status(),
    };
  },
});

interface Target {
  /** …/v1beta/models/<model> */
  modelUrl: string;
  model: string;
  key: string | undefined;
  secrets: Array<string | undefined>;
}

interface Route {
  router: UpstreamRouter<Target>;
  budget: RetryBudget;
  upstream: UpstreamOptions;
  opts: GeminiOptions;
}

function deploymentTargets(ctx: PluginContext<GeminiOptions>, opts: GeminiOptions) {
  const model = (opts.upstreamModel ?? ctx.modelId).replace(/^models\//, "");
  const target = (baseUrl: string, m: string, key: string | undefined): Target => ({
    modelUrl: `${baseUrl}/${opts.apiVersion}/models/${encodeURIComponent(m.replace(/^models\//, ""))}`, model: m, key, secrets: [key, urlPassword(baseUrl)],
  });
  if (opts.deployments === undefined) {
    const baseUrl = (opts.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const keyEnv = opts.apiKeyEnv ?? DEFAULT_KEY_ENV;
    const key = ctx.env(keyEnv);
    if (!key) ctx.logger.warn("apiKeyEnv names an unset environment variable; calling Gemini without a key", { apiKeyEnv: keyEnv });
    return [{ name: new URL(baseUrl).host, weight: 1, target: target(baseUrl, model, key) }];
  }
  const names = deploymentNames(opts.deployments);
  return opts.deployments.map((d, i) => {
    const keyEnv = d.apiKeyEnv ?? DEFAULT_KEY_ENV;
    const key = ctx.env(keyEnv);
    // a deployment without its key would answer 403 to every request routed to it
    if (!key) throw new Error(`deployment "${names[i]}": apiKeyEnv names the environment variable ${keyEnv}, which is not set`);
    return { name: names[i]!, weight: d.weight, maxConcurrent: d.maxConcurrent, target: target(d.baseUrl.replace(/\/+$/, ""), d.upstreamModel ?? model, key) };
  });
}

/** POST to one of the model's methods (`generateContent`, `streamGenerateContent?alt=sse` …), Gemini's failures as the SDK's kinds. */
async function post(t: Target, method: string, json: unknown, call: CallOptions, route: Route, stream: boolean): Promise<UpstreamResponse> {
  try {
    return await callUpstream({
      url: `${t.modelUrl}:${method}`, json, stream,
      headers: { accept: stream ? "text/event-stream" : "application/json", ...(t.key ? { "x-goog-api-key": t.key } : {}) },
    }, call, route.upstream);
  } catch (err) {
    throw fromUpstream(err);
  }
}

/**
 * Gemini answers a wrong key with 400 INVALID_ARGUMENT "API key not valid" (reason
 * API_KEY_INVALID): that is reelay's credential, not the client's request — a 401 (the client gets
 * 502 upstream_auth_failed, and another deployment, with its own key, is tried).
 */
function fromUpstream(err: unknown): unknown {
  if (!isPluginError(err) || err.kind !== "upstream_http") return err;
  if (err.status === 400 && /API key not valid/i.test(err.message)) return new PluginError("upstream_http", err.message, { status: 401, code: "API_KEY_INVALID", cause: err });
  return err;
}

/** An image URL's bytes through reelay's SSRF guard, as inline data; what cannot be fetched is the client's 400. */
async function fetchImage(ctx: PluginContext<GeminiOptions>, opts: GeminiOptions, url: string, param: string): Promise<{ mimeType: string; data: string }> {
  try {
    const { bytes, contentType } = await ctx.safeFetchBytes(url, { maxBytes: opts.imageUrls.maxBytes, timeoutMs: opts.imageUrls.timeoutMs, allowPrivateNetwork: opts.imageUrls.allowPrivateNetwork });
    const mimeType = (contentType ?? "").split(";")[0]!.trim().toLowerCase() || sniff(bytes);
    if (!mimeType.startsWith("image/")) throw new PluginError("invalid_request", `${param}: ${url} is not an image (${mimeType || "unknown type"}).`, { param, code: "invalid_image_url" });
    return { mimeType, data: Buffer.from(bytes).toString("base64") };
  } catch (err) {
    if (isSafeFetchError(err)) throw new PluginError("invalid_request", `${param}: the image could not be downloaded (${err.code}: ${err.message}).`, { param, code: "invalid_image_url" });
    throw err;
  }
}

function sniff(b: Uint8Array): string {
  if (b[0] === 0x89 && b[1] === 0x50) return "image/png";
  if (b[0] === 0xff && b[1] === 0xd8) return "image/jpeg";
  if (b[0] === 0x47 && b[1] === 0x49) return "image/gif";
  if (b[8] === 0x57 && b[9] === 0x45) return "image/webp";
  return "";
}

function chat(modelId: string, route: Route, translate: TranslateOptions): ChatCapability {
  const { router, budget, opts } = route;
  return {
    async complete(body, call) {
      // translated once: an image URL is downloaded once, whichever deployment answers
      const request = await toGenerateRequest(body, translate);
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const res = await post(target, "generateContent", request, call, route, false);
        const completion = toChatCompletion(await res.json<GenerateResponse>(opts.limits.maxResponseBytes), modelId);
        return { completion, upstreamUsage: completion.usage };
      }, { budget });
      return value;
    },

    async stream(body, call) {
      const request = await toGenerateRequest(body, translate);
      const { value, lease } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const res = await post(target, "streamGenerateContent?alt=sse", request, call, route, true);
        const type = res.headers.get("content-type") ?? "";
        if (!type.startsWith("text/event-stream")) {
          res.close();
          throw new PluginError("malformed", `upstream answered a stream request with content-type ${JSON.stringify(type)}, not text/event-stream`);
        }
        const events = toChatStream(res.jsonSse({ maxEventBytes: opts.limits.maxEventBytes }), modelId)[Symbol.asyncIterator]();
        try {
          return { events, first: await events.next() };
        } catch (err) {
          res.close();
          throw retryableBeforeFirstEvent(err);
        }
      }, { budget, holdOnSuccess: true });
      return leasedStream(value.events, value.first, lease, call.signal);
    },
  };
}

function embeddings(route: Route): EmbeddingsCapability {
  const { router, budget, opts } = route;
  const task = opts.embeddingTaskType ? { taskType: opts.embeddingTaskType } : {};
  return {
    supportsDimensions: true,
    maxInputs: 2048,
    async embed({ body, inputs }, call) {
      if (!inputs.length) throw new PluginError("invalid_request", "This model embeds text: input must be a string or an array of strings.", { param: "input" });
      const dims = typeof body.dimensions === "number" ? { outputDimensionality: body.dimensions } : {};
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const item = (text: string) => ({ content: { parts: [{ text }] }, ...task, ...dims });
        if (inputs.length === 1) {
          const res = await post(target, "embedContent", item(inputs[0]!), call, route, false);
          return [vector(await res.json(opts.limits.maxResponseBytes), 0)];
        }
        const out: number[][] = [];
        for (let at = 0; at < inputs.length; at += EMBED_BATCH) {
          const requests = inputs.slice(at, at + EMBED_BATCH).map((text) => ({ model: `models/${target.model.replace(/^models\//, "")}`, ...item(text) }));
          const res = await post(target, "batchEmbedContents", { requests }, call, route, false);
          const json = await res.json<{ embeddings?: unknown[] }>(opts.limits.maxResponseBytes);
          if (!Array.isArray(json?.embeddings) || json.embeddings.length !== requests.length) throw new PluginError("malformed", `upstream batchEmbedContents answered ${Array.isArray(json?.embeddings) ? json.embeddings.length : "no"} embeddings for ${requests.length} inputs`);
          json.embeddings.forEach((e, i) => out.push(vector({ embedding: e }, at + i)));
        }
        return out;
      }, { budget });
      // Gemini reports no token counts for embeddings: reelay counts them
      return { data: value.map((embedding, index) => ({ index, embedding })) };
    },
  };
}

function vector(json: any, index: number): number[] {
  const values = json?.embedding?.values;
  if (!Array.isArray(values) || !values.every((v) => typeof v === "number")) throw new PluginError("malformed", `upstream embeddings answer: input ${index} has no values`);
  return values;
}
