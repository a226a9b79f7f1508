/**
 * openai-compatible: pass-through chat (and optionally embeddings) to any OpenAI-compatible
 * upstream (vLLM, Ollama's /v1, llama.cpp server, OpenAI). The body goes upstream unchanged except
 * `model` (→ upstreamModel) and, for streams, `stream_options` (usage forced on); answers come back
 * as the upstream gave them, its usage report relayed as `upstreamUsage` for the host to judge.
 * `provider: <name>` (presets.ts) names a known provider: its URL, auth scheme and quirks — fields
 * it refuses left out or renamed, its reasoning and cache fields and stream usage brought to
 * OpenAI's shape (quirks.ts) — each overridable in the model's options.
 * Options: options.ts. Deadlines, retries of refused connections and error mapping: the SDK's
 * callUpstream. Several deployments (`deployments`): the SDK's UpstreamRouter picks one per attempt
 * (weights, least outstanding, circuit breakers) and routedCall retries a safe failure on another;
 * a stream is only ever retried before its first event.
 */
import {
  callUpstream, DEFAULT_BREAKER, definePlugin, deploymentNames, leasedStream, PluginError, redactor, retryableBeforeFirstEvent, routedCall, UpstreamRouter, urlPassword,
  type CallOptions, type ChatCapability, type ChatCompletion, type EmbeddingsCapability, type PluginContext, type RetryBudget, type UpstreamOptions,
} from "@reelay/plugin-sdk";
import { DEFAULT_MAX_RESPONSE_BYTES, OpenAICompatibleOptions, validateOptions } from "./options.ts";
import { presetOf } from "./presets.ts";
import { authHeaders, chatBody, endpointUrl, quirksOf, reshapeCompletion, reshapesAnswers, reshapeStream, type Quirks } from "./quirks.ts";

export type { OpenAICompatibleOptions } from "./options.ts";

export default definePlugin({
  name: "openai-compatible",
  options: OpenAICompatibleOptions,
  validateOptions,
  create(ctx) {
    const opts = ctx.options;
    const targets = deploymentTargets(ctx, opts);
    // one deployment given as `baseUrl` behaves as before: refused connections retried on it, no
    // circuit breaker (a single upstream has nowhere else to send the traffic)
    const legacy = opts.deployments === undefined;
    const router = new UpstreamRouter(targets, legacy ? NO_BREAKER : opts.routing.breaker);
    const upstream: UpstreamOptions = {
      timeouts: opts.timeouts,
      fetch: ctx.fetch,
      redact: redactor(targets.flatMap((t) => t.target.secrets)),
      ...(targets.length > 1 ? { retryRefusedMs: [] } : {}),
    };
    const route: Route = { router, budget: opts.routing, upstream };
    return {
      chat: opts.capabilities.includes("chat") ? chat(opts, route) : undefined,
      embeddings: opts.capabilities.includes("embeddings") ? embeddings(opts, route) : undefined,
      upstreams: () => router.status(),
    };
  },
});

/** What an attempt needs of a deployment. */
interface Target {
  chatUrl: string;
  embeddingsUrl: string;
  model: string;
  /** its key (by its auth scheme) and its preset's and the model's extra headers */
  headers: Record<string, string>;
  quirks: Quirks;
  /** its key and URL password, redacted from everything relayed */
  secrets: Array<string | undefined>;
}

interface Route {
  router: UpstreamRouter<Target>;
  budget: RetryBudget;
  upstream: UpstreamOptions;
}

/** A breaker that never opens: the legacy single `baseUrl` keeps its old behaviour (the router still counts). */
const NO_BREAKER = { ...DEFAULT_BREAKER, enabled: false };

function deploymentTargets(ctx: PluginContext<OpenAICompatibleOptions>, opts: OpenAICompatibleOptions) {
  const model = opts.upstreamModel ?? ctx.modelId;
  const target = (provider: string | undefined, baseUrl: string, upstreamModel: string, key: string | undefined, apiVersion: string | undefined, headers?: Record<string, string>): Target => {
    const quirks = quirksOf(presetOf(provider), opts, headers);
    return {
      chatUrl: endpointUrl(baseUrl, provider, apiVersion, upstreamModel, "chat/completions"),
      embeddingsUrl: endpointUrl(baseUrl, provider, apiVersion, upstreamModel, "embeddings"),
      model: upstreamModel, quirks,
      headers: { ...quirks.headers, ...authHeaders(quirks.auth, key) },
      secrets: [key, urlPassword(baseUrl)],
    };
  };
  if (opts.deployments === undefined) {
    const preset = presetOf(opts.provider);
    const baseUrl = (opts.baseUrl ?? preset.baseUrl)!.replace(/\/+$/, "");
    const keyEnv = opts.apiKeyEnv ?? preset.apiKeyEnv;
    const key = keyEnv ? ctx.env(keyEnv) : undefined;
    if (keyEnv && !key) ctx.logger.warn("apiKeyEnv names an unset environment variable; calling upstream without a key", { apiKeyEnv: keyEnv });
    return [{ name: new URL(baseUrl).host, weight: 1, target: target(opts.provider, baseUrl, model, key, opts.apiVersion) }];
  }
  const withUrls = opts.deployments.map((d) => ({ ...d, provider: d.provider ?? opts.provider, baseUrl: (d.baseUrl ?? presetOf(d.provider ?? opts.provider).baseUrl)!.replace(/\/+$/, "") }));
  const names = deploymentNames(withUrls);
  return withUrls.map((d, i) => {
    let key: string | undefined;
    const keyEnv = d.apiKeyEnv ?? presetOf(d.provider).apiKeyEnv;
    if (keyEnv) {
      key = ctx.env(keyEnv);
      // a deployment without its key would answer 401 to every request routed to it
      if (!key) throw new Error(`deployment "${names[i]}": apiKeyEnv names the environment variable ${keyEnv}, which is not set`);
    }
    return { name: names[i]!, weight: d.weight, maxConcurrent: d.maxConcurrent, target: target(d.provider, d.baseUrl, d.upstreamModel ?? model, key, d.apiVersion ?? opts.apiVersion, d.headers) };
  });
}

function chat(opts: OpenAICompatibleOptions, route: Route): ChatCapability {
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.chat;
  const { router, budget, upstream } = route;
  return {
    async complete(body, call) {
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const res = await callUpstream({ url: target.chatUrl, json: chatBody(body, target.quirks, target.model), headers: { ...target.headers, accept: "application/json" } }, call, upstream);
        let completion = await res.json<ChatCompletion>(maxBytes);
        if (typeof completion !== "object" || completion === null || !Array.isArray(completion.choices)) throw new PluginError("malformed", "upstream completion has no choices array");
        if (reshapesAnswers(target.quirks)) completion = reshapeCompletion(completion, target.quirks);
        // the upstream's numbers as it sent them: the host bills them when credible, its own count otherwise
        return { completion, upstreamUsage: completion.usage };
      }, { budget });
      return value;
    },

    async stream(body, call) {
      const stream_options = {
        ...(isObject(body.stream_options) ? body.stream_options : {}),
        include_usage: true,
        ...(opts.continuousUsageStats ? { continuous_usage_stats: true } : {}),
      };
      // the attempt lasts until the first event: a failure before it has sent the client nothing
      const { value, lease } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const q = target.quirks;
        // a provider that refuses stream_options sends its usage unasked (reshapeStream moves it)
        const { stream_options: _, ...rest } = chatBody(body, q, target.model);
        const json = q.streamUsage ? { ...rest, stream: true, stream_options } : { ...rest, stream: true };
        const res = await callUpstream({ url: target.chatUrl, json, headers: { ...target.headers, accept: "text/event-stream" }, stream: true }, call, upstream);
        const type = res.headers.get("content-type") ?? "";
        if (!type.startsWith("text/event-stream")) {
          res.close();
          throw new PluginError("malformed", `upstream answered a stream request with content-type ${JSON.stringify(type)}, not text/event-stream`);
        }
        const sse = res.sse({ maxEventBytes: opts.limits.maxEventBytes });
        const events = (reshapesAnswers(q) ? reshapeStream(sse, q) : sse)[Symbol.asyncIterator]();
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

function embeddings(opts: OpenAICompatibleOptions, route: Route): EmbeddingsCapability {
  const maxBytes = opts.limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES.embeddings;
  const { router, budget, upstream } = route;
  return {
    supportsDimensions: true,
    async embed({ body }, call: CallOptions) {
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const res = await callUpstream({ url: target.embeddingsUrl, json: { ...body, model: target.model }, headers: { ...target.headers, accept: "application/json" } }, call, upstream);
        const json = await res.json<{ data?: unknown; usage?: unknown }>(maxBytes);
        if (!Array.isArray(json?.data)) throw new PluginError("malformed", "upstream embeddings answer has no data array");
        const data = json.data.map((d: any, i: number) => {
          if (!Array.isArray(d?.embedding) && typeof d?.embedding !== "string") throw new PluginError("malformed", `upstream embeddings answer: data[${i}] has no embedding`);
          return { index: typeof d.index === "number" ? d.index : i, embedding: d.embedding };
        });
        // some servers (older llama.cpp) omit usage: the host then bills its own count
        return { data, upstreamUsage: json.usage };
      }, { budget });
      return value;
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
