/**
 * bedrock: Amazon Bedrock's Converse and ConverseStream APIs through the AWS SDK for JavaScript
 * (@aws-sdk/client-bedrock-runtime): SigV4 from the standard AWS credential chain (or a Bedrock
 * API key as a Bearer token), a region per deployment, `baseUrl` as the SDK's endpoint override.
 *
 * - `chat`: OpenAI chat → Converse (to-converse.ts) and back (from-converse.ts), streamed event
 *   by event; usage with prompt-cache reads and writes relayed as `upstreamUsage` for the host to
 *   judge and bill at the model's cache prices
 * The SDK's own retries are off (maxAttempts 1): the SDK's UpstreamRouter and routedCall decide,
 * as for every routing plugin — a ThrottlingException (429, its wait as Retry-After and the
 * breaker's), a 5xx, a model not ready, a reset or a deadline before the first event moves to
 * another deployment; a stream is never retried after its first event. HTTP goes through the
 * host's fetch with reelay's four deadlines (transport.ts).
 */
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import {
  DEFAULT_BREAKER, DEFAULT_UPSTREAM_TIMEOUTS, definePlugin, isSafeFetchError, leasedStream, PluginError, retryableBeforeFirstEvent, routedCall, UpstreamRouter,
  type ChatCapability, type ChatStreamEvent, type PluginContext, type RetryBudget,
} from "@reelay/plugin-sdk";
import { failureOf, toChatCompletion, toChatStream } from "./from-converse.ts";
import { BedrockOptions, deploymentName, validateOptions } from "./options.ts";
import { toConverseRequest, type TranslateOptions } from "./to-converse.ts";
import { fetchHandler } from "./transport.ts";

export type { BedrockOptions } from "./options.ts";

export default definePlugin({
  name: "bedrock",
  options: BedrockOptions,
  validateOptions,
  create(ctx) {
    const opts = ctx.options;
    const targets = deploymentTargets(ctx, opts);
    const single = opts.deployments === undefined;
    const router = new UpstreamRouter(targets, single ? { ...DEFAULT_BREAKER, enabled: false } : opts.routing.breaker);
    const translate: TranslateOptions = {
      thinking: opts.thinking, reasoningBudgets: opts.reasoningBudgets, cachePrompt: opts.cachePrompt, additionalModelRequestFields: opts.additionalModelRequestFields,
      fetchImage: (url, param) => fetchImage(ctx, opts, url, param),
    };
    return { chat: chat(ctx.modelId, { router, budget: opts.routing, opts }, translate), upstreams: () => router.status(), close: () => targets.forEach((t) => t.target.client.destroy()) };
  },
});

interface Target {
  client: BedrockRuntimeClient;
  model: string;
}

interface Route {
  router: UpstreamRouter<Target>;
  budget: RetryBudget;
  opts: BedrockOptions;
}

function deploymentTargets(ctx: PluginContext<BedrockOptions>, opts: BedrockOptions) {
  const timeouts = { ...DEFAULT_UPSTREAM_TIMEOUTS, ...opts.timeouts };
  // credentials from the environment are read through ctx.env, so the host masks them in what it relays and logs;
  // without them the SDK's standard chain (shared config, SSO, web identity, container and instance roles) applies
  const accessKeyId = ctx.env("AWS_ACCESS_KEY_ID");
  const secretAccessKey = ctx.env("AWS_SECRET_ACCESS_KEY");
  const sessionToken = ctx.env("AWS_SESSION_TOKEN");
  const credentials = accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : undefined;
  const defaultRegion = opts.region ?? ctx.env("AWS_REGION") ?? ctx.env("AWS_DEFAULT_REGION");
  const list = opts.deployments ?? [{ baseUrl: opts.baseUrl, apiKeyEnv: opts.apiKeyEnv, weight: 1 } as NonNullable<BedrockOptions["deployments"]>[number]];
  return list.map((d, i) => {
    const name = deploymentName(d, i);
    const region = d.region ?? defaultRegion;
    if (!region) throw new Error(`deployment "${name}": no region (give the model or the deployment a "region", or set AWS_REGION)`);
    let token: string | undefined;
    if (d.apiKeyEnv) {
      token = ctx.env(d.apiKeyEnv);
      if (!token) throw new Error(`deployment "${name}": apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    }
    const client = new BedrockRuntimeClient({
      region,
      ...(d.baseUrl ? { endpoint: d.baseUrl.replace(/\/+$/, "") } : {}),
      maxAttempts: 1,
      requestHandler: fetchHandler(ctx.fetch, timeouts) as never,
      ...(token ? { token: { token }, authSchemePreference: ["httpBearerAuth"] } : credentials ? { credentials } : {}),
    });
    return { name, weight: d.weight, maxConcurrent: d.maxConcurrent, target: { client, model: d.upstreamModel ?? opts.upstreamModel ?? ctx.modelId } };
  });
}

/** An image URL's bytes through reelay's SSRF guard; what cannot be fetched is the client's 400. */
async function fetchImage(ctx: PluginContext<BedrockOptions>, opts: BedrockOptions, url: string, param: string): Promise<{ mime: string; bytes: Uint8Array }> {
  try {
    const { bytes, contentType } = await ctx.safeFetchBytes(url, { maxBytes: opts.imageUrls.maxBytes, timeoutMs: opts.imageUrls.timeoutMs, allowPrivateNetwork: opts.imageUrls.allowPrivateNetwork });
    return { mime: (contentType ?? "").split(";")[0]!.trim().toLowerCase(), bytes };
  } catch (err) {
    if (isSafeFetchError(err)) throw new PluginError("invalid_request", `${param}: the image could not be downloaded (${err.code}: ${err.message}).`, { param, code: "invalid_image_url" });
    throw err;
  }
}

function chat(modelId: string, route: Route, translate: TranslateOptions): ChatCapability {
  const { router, budget, opts } = route;
  return {
    async complete(body, call) {
      // translated once: an image URL is downloaded once, whichever deployment answers
      const request = await toConverseRequest(body, translate);
      const { value } = await routedCall(router, call, async ({ deployment: { target } }) => {
        let answer;
        try {
          answer = await target.client.send(new ConverseCommand({ modelId: target.model, ...request } as never), { abortSignal: call.signal });
        } catch (err) {
          throw failureOf(err, false, call.signal, opts.throttleRetryAfterSeconds);
        }
        const completion = toChatCompletion(answer, modelId);
        return { completion, upstreamUsage: completion.usage };
      }, { budget });
      return value;
    },

    async stream(body, call) {
      const request = await toConverseRequest(body, translate);
      const { value, lease } = await routedCall(router, call, async ({ deployment: { target } }) => {
        // aborted when the client goes away or the consumer stops: the HTTP request ends with it
        const ac = new AbortController();
        const onAbort = () => ac.abort(call.signal.reason);
        call.signal.addEventListener("abort", onAbort, { once: true });
        let response;
        try {
          response = await target.client.send(new ConverseStreamCommand({ modelId: target.model, ...request } as never), { abortSignal: ac.signal });
        } catch (err) {
          call.signal.removeEventListener("abort", onAbort);
          throw failureOf(err, false, call.signal, opts.throttleRetryAfterSeconds);
        }
        if (!response.stream) throw new PluginError("malformed", "upstream ConverseStream answer has no event stream");
        const events = guarded(toChatStream(response.stream as AsyncIterable<Record<string, unknown>>, modelId), ac, call.signal, opts, () => call.signal.removeEventListener("abort", onAbort))[Symbol.asyncIterator]();
        try {
          return { events, first: await events.next() };
        } catch (err) {
          ac.abort();
          throw retryableBeforeFirstEvent(err);
        }
      }, { budget, holdOnSuccess: true });
      return leasedStream(value.events, value.first, lease, call.signal);
    },
  };
}

/** The chat events with the SDK's errors as the right kinds, the HTTP request stopped when they end early. */
async function* guarded(events: AsyncIterable<ChatStreamEvent>, ac: AbortController, signal: AbortSignal, opts: BedrockOptions, done: () => void): AsyncGenerator<ChatStreamEvent> {
  let started = false;
  try {
    for await (const e of events) {
      started = true;
      yield e;
    }
  } catch (err) {
    throw failureOf(err, started, signal, opts.throttleRetryAfterSeconds);
  } finally {
    done();
    if (!ac.signal.aborted) ac.abort();
  }
}
