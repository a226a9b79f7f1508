/**
 * anthropic: Claude models through Anthropic's Messages API (https://api.anthropic.com or any
 * server speaking it), behind every reelay API.
 *
 * - `chat`: OpenAI chat requests translated to Messages (to-messages.ts) and answers back
 *   (from-messages.ts), streamed chunk by chunk; usage with cache reads and writes relayed as
 *   `upstreamUsage` for the host to judge and bill at the model's cache prices.
 * - `messages`: the native capability: a client's /v1/messages request for this model goes
 *   upstream as sent (model name mapped, max_tokens clamped by the host), with the client's
 *   anthropic-version and anthropic-beta, and comes back as the upstream sent it — thinking
 *   signatures, cache_control and beta fields untouched. count_tokens is asked of the upstream.
 * Several deployments (`deployments`): the SDK's UpstreamRouter and routedCall, exactly as
 * openai-compatible — a retryable failure (429, 5xx, 529 overloaded, a reset, a deadline before
 * the first event) moves to another deployment; a stream is never retried after its first event.
 */
import {
  callUpstream, DEFAULT_BREAKER, definePlugin, deploymentNames, leasedStream, PluginError, redactor, retryableBeforeFirstEvent, routedCall, UpstreamRouter, urlPassword,
  type AnthropicMessage, type CallOptions, type ChatCapability, type Lease, type MessagesCallOptions, type MessagesCapability, type MessagesStreamEvent,
  type PluginContext, type RetryBudget, type UpstreamOptions, type UpstreamResponse,
} from "@reelay/plugin-sdk";
import { toChatCompletion, toChatStream } from "./from-messages.ts";
import { AnthropicOptions, DEFAULT_BASE_URL, validateOptions } from "./options.ts";
import { toMessagesRequest, type TranslateOptions } from "./to-messages.ts";
import { errorEventFailure, fromUpstream } from "./upstream-errors.ts";

export type { AnthropicOptions } from "./options.ts";

export default definePlugin({
  name: "anthropic",
  options: AnthropicOptions,
  validateOptions,
  create(ctx) {
    const opts = ctx.options;
    const targets = deploymentTargets(ctx, opts);
    // one upstream given as `baseUrl` (or the default): no circuit breaker, refused connections
    // retried on it (it has nowhere else to send the traffic), as openai-compatible does
    const single = opts.deployments === undefined;
    const router = new UpstreamRouter(targets, single ? { ...DEFAULT_BREAKER, enabled: false } : opts.routing.breaker);
    const upstream: UpstreamOptions = {
      timeouts: opts.timeouts,
      fetch: ctx.fetch,
      redact: redactor(targets.flatMap((t) => t.target.secrets)),
      ...(targets.length > 1 ? { retryRefusedMs: [] } : {}),
    };
    const route: Route = { router, budget: opts.routing, upstream, opts };
    const translate: TranslateOptions = { model: "", defaultMaxTokens: ctx.model.maxOutputTokens ?? opts.defaultMaxTokens, reasoningBudgets: opts.reasoningBudgets };
    return { chat: chat(ctx.modelId, route, translate), messages: messages(route), upstreams: () => router.status() };
  },
});

/** What an attempt needs of a deployment. */
interface Target {
  baseUrl: string;
  model: string;
  key: string | undefined;
  /** its key and URL password, redacted from everything relayed */
  secrets: Array<string | undefined>;
}

interface Route {
  router: UpstreamRouter<Target>;
  budget: RetryBudget;
  upstream: UpstreamOptions;
  opts: AnthropicOptions;
}

function deploymentTargets(ctx: PluginContext<AnthropicOptions>, opts: AnthropicOptions) {
  const model = opts.upstreamModel ?? ctx.modelId;
  if (opts.deployments === undefined) {
    const baseUrl = (opts.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const key = opts.apiKeyEnv ? ctx.env(opts.apiKeyEnv) : undefined;
    if (!key) ctx.logger.warn(opts.apiKeyEnv ? "apiKeyEnv names an unset environment variable; calling Anthropic without a key" : "no apiKeyEnv: calling Anthropic without a key", { apiKeyEnv: opts.apiKeyEnv });
    return [{ name: new URL(baseUrl).host, weight: 1, target: { baseUrl, model, key, secrets: [key, urlPassword(baseUrl)] } }];
  }
  const names = deploymentNames(opts.deployments);
  return opts.deployments.map((d, i) => {
    const baseUrl = d.baseUrl.replace(/\/+$/, "");
    const key = d.apiKeyEnv ? ctx.env(d.apiKeyEnv) : undefined;
    // a deployment without its key would answer 401 to every request routed to it
    if (d.apiKeyEnv && !key) throw new Error(`deployment "${names[i]}": apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    return { name: names[i]!, weight: d.weight, maxConcurrent: d.maxConcurrent, target: { baseUrl, model: d.upstreamModel ?? model, key, secrets: [key, urlPassword(baseUrl)] } };
  });
}

/** The headers of one call: the key, the API version (the client's on a native call), the betas (the model's and the client's). */
function headersFor(t: Target, opts: AnthropicOptions, accept: string, call?: Partial<MessagesCallOptions>): Record<string, string> {
  const betas = [...new Set([...(opts.betas ?? []), ...(call?.anthropicBeta ?? [])])];
  return {
    accept,
    "anthropic-version": call?.anthropicVersion ?? opts.anthropicVersion,
    ...(t.key ? { "x-api-key": t.key } : {}),
    ...(betas.length ? { "anthropic-beta": betas.join(",") } : {}),
  };
}

/** POST a body to a deployment's Messages endpoint; 529 becomes `overloaded`. */
async function post(path: string, t: Target, json: unknown, call: CallOptions & Partial<MessagesCallOptions>, route: Route, stream: boolean): Promise<UpstreamResponse> {
  try {
    return await callUpstream({ url: `${t.baseUrl}${path}`, json, headers: headersFor(t, route.opts, stream ? "text/event-stream" : "application/json", call), stream }, call, route.upstream);
  } catch (err) {
    throw fromUpstream(err);
  }
}

function chat(modelId: string, route: Route, translate: TranslateOptions): ChatCapability {
  const { router, budget, opts } = route;
  return {
    async complete(body, call) {
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const { request, customTools } = toMessagesRequest(body, { ...translate, model: target.model });
        const res = await post("/v1/messages", target, request, call, route, false);
        const completion = toChatCompletion(await res.json<AnthropicMessage>(opts.limits.maxResponseBytes), modelId, customTools);
        // the upstream's numbers as it sent them, in OpenAI's shape: the host bills them when credible
        return { completion, upstreamUsage: completion.usage };
      }, { budget });
      return value;
    },

    async stream(body, call) {
      // the attempt lasts until the first chat chunk: an upstream failure before it (an overloaded
      // error event right after message_start included) has sent the client nothing
      const { value, lease } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const { request, customTools } = toMessagesRequest(body, { ...translate, model: target.model });
        const res = await post("/v1/messages", target, { ...request, stream: true }, call, route, true);
        const chunks = toChatStream(upstreamEvents(res, opts), modelId, customTools)[Symbol.asyncIterator]();
        try {
          return { events: chunks, first: await chunks.next() };
        } catch (err) {
          res.close();
          throw retryableBeforeFirstEvent(err);
        }
      }, { budget, holdOnSuccess: true });
      return leasedStream(value.events, value.first, lease, call.signal);
    },
  };
}

/** A stream's events, after checking the answer is one. */
function upstreamEvents(res: UpstreamResponse, opts: AnthropicOptions): AsyncIterable<MessagesStreamEvent> {
  const type = res.headers.get("content-type") ?? "";
  if (!type.startsWith("text/event-stream")) {
    res.close();
    throw new PluginError("malformed", `upstream answered a stream request with content-type ${JSON.stringify(type)}, not text/event-stream`);
  }
  return res.messagesSse({ maxEventBytes: opts.limits.maxEventBytes });
}

/** Request fields count_tokens does not take (it refuses unknown fields). */
const GENERATION_ONLY = ["max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "metadata", "service_tier", "container", "context_management"];

function messages(route: Route): MessagesCapability {
  const { router, budget, opts } = route;
  return {
    async create(body, call) {
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const { stream: _, ...rest } = body;
        const res = await post("/v1/messages", target, { ...rest, model: target.model }, call, route, false);
        const message = await res.json<AnthropicMessage>(opts.limits.maxResponseBytes);
        if (typeof message !== "object" || message === null || message.type !== "message" || !Array.isArray(message.content)) throw new PluginError("malformed", "upstream answer is not an Anthropic message (no content array)");
        return { message, upstreamUsage: message.usage };
      }, { budget });
      return value;
    },

    async stream(body, call) {
      const { value, lease } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const res = await post("/v1/messages", target, { ...body, model: target.model, stream: true }, call, route, true);
        const events = passThrough(upstreamEvents(res, opts))[Symbol.asyncIterator]();
        try {
          return { events, first: await events.next() };
        } catch (err) {
          res.close();
          throw retryableBeforeFirstEvent(err);
        }
      }, { budget, holdOnSuccess: true });
      return leasedStream(value.events, value.first, lease as Lease<Target>, call.signal);
    },

    async countTokens(body, call) {
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        const request: Record<string, unknown> = { ...body, model: target.model };
        for (const k of GENERATION_ONLY) delete request[k];
        const res = await post("/v1/messages/count_tokens", target, request, call, route, false);
        const json = await res.json<{ input_tokens?: unknown }>(opts.limits.maxResponseBytes);
        if (typeof json?.input_tokens !== "number") throw new PluginError("malformed", "upstream count_tokens answer has no input_tokens");
        return { input_tokens: json.input_tokens };
      }, { budget });
      return value;
    },
  };
}

/**
 * The upstream's events as they came, with two holds: `message_start` (and pings) wait for the
 * next event, so an `error` event right after message_start — Anthropic's overloaded answer once
 * the stream has begun — fails the attempt before the client got anything and another deployment
 * may answer; an `error` event later is thrown as `stream_interrupted` (the host writes the
 * client's error event). `message_stop` ends it.
 */
async function* passThrough(events: AsyncIterable<MessagesStreamEvent>): AsyncGenerator<MessagesStreamEvent> {
  const held: MessagesStreamEvent[] = [];
  let started = false;
  for await (const e of events) {
    if (e.event === "error") throw errorEventFailure(e.json as { error?: { type?: unknown; message?: unknown } }, started);
    if (!started && (e.event === "message_start" || e.event === "ping")) {
      held.push(e);
      continue;
    }
    started = true;
    if (held.length) yield* held.splice(0);
    yield e;
    if (e.event === "message_stop") return;
  }
  throw new PluginError(started ? "stream_interrupted" : "malformed", "upstream stream ended before message_stop");
}
