/**
 * A small in-memory plugin (chat, embeddings, video) that passes the SDK's contract, and variants
 * of it that each get one thing wrong, for contract-catches-broken-plugins.test.ts. Its "upstream"
 * is a variable the failure scenarios set.
 */
import { chatChunks, definePlugin, PluginError, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type ReelayPlugin, type VideoPollResult } from "@reelay/plugin-sdk";
import type { FailureScenarios } from "@reelay/plugin-sdk/contract";

export const VARIANTS = [
  "good",
  "unbranded-errors", // throws plain Errors: reelay answers 502 plugin_failed whatever happened
  "wrong-status-kind", // an upstream 401 thrown as invalid_request: the client gets 400 instead of 502
  "wrong-retry", // an upstream 500 marked not retryable, a 429 too: the scheduler would give up at once
  "usage-chunk-not-last", // the usage chunk sent before the last content chunk
  "events-without-json", // stream events without their parsed JSON
  "ignores-abort", // keeps streaming for seconds after the client went away
  "usage-only-in-completion", // counts in completion.usage but not returned: reelay would bill its own count
  "string-usage", // usage counts as strings
  "progress-percent", // video progress 0–100
  "numeric-handle", // a number as the video handle
  "not-an-mp4", // HTML bytes as the MP4
  "permanent-failure-retried", // a content-policy refusal marked retryable
] as const;
export type Variant = (typeof VARIANTS)[number];

type Upstream = { status?: number; unreachable?: boolean; breakMidStream?: boolean; jobFails?: boolean };
const upstream: Upstream = {};

export const scenarios: FailureScenarios = {
  httpStatus: (status) => void (upstream.status = status),
  unreachable: () => void (upstream.unreachable = true),
  breakMidStream: () => void (upstream.breakMidStream = true),
  jobFails: () => void (upstream.jobFails = true),
  reset: () => {
    for (const k of Object.keys(upstream)) delete upstream[k as keyof Upstream];
  },
};

const FTYP = Uint8Array.of(0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function brokenPlugin(variant: Variant): ReelayPlugin {
  /** what a real plugin would throw for the upstream's state */
  const failure = () => {
    if (variant === "unbranded-errors" && (upstream.status || upstream.unreachable)) throw new Error("upstream failed");
    if (upstream.unreachable) throw new PluginError("connect", "connection refused");
    const status = upstream.status;
    if (!status) return;
    if (variant === "wrong-status-kind" && status === 401) throw new PluginError("invalid_request", "unauthorised");
    if (variant === "wrong-retry" && (status >= 500 || status === 429)) throw new PluginError("upstream_http", `HTTP ${status}`, { status, retryable: false });
    throw new PluginError("upstream_http", `HTTP ${status}`, { status });
  };
  const usage = { prompt_tokens: 4, completion_tokens: 2 };

  const chat: ModelInstance["chat"] = {
    async complete(body: ChatCompletionRequest, { signal }) {
      signal.throwIfAborted();
      failure();
      const out = chatChunks({ model: body.model });
      const completion = out.completion({ content: "hi there" }, "stop", usage);
      if (variant === "usage-only-in-completion") return { completion };
      if (variant === "string-usage") return { completion, usage: { prompt_tokens: "4", completion_tokens: "2" } as never };
      return { completion, usage };
    },
    async stream(body: ChatCompletionRequest, { signal }) {
      failure();
      const out = chatChunks({ model: body.model });
      const json = (e: ChatStreamEvent) => (variant === "events-without-json" ? ({ data: e.data } as ChatStreamEvent) : e);
      return (async function* () {
        yield json(out.delta("hi "));
        if (upstream.breakMidStream) throw new PluginError("stream_interrupted", "connection reset");
        if (variant === "usage-chunk-not-last") yield out.usage(usage);
        for (let i = 0; i < (variant === "ignores-abort" ? 50 : 1); i++) {
          if (variant !== "ignores-abort") signal.throwIfAborted();
          else await sleep(100);
          yield json(out.delta("there"));
        }
        yield json(out.finish("stop"));
        if (variant !== "usage-chunk-not-last") yield json(out.usage(usage));
        yield out.done();
      })();
    },
  };

  const jobs = new Map<string, { polls: number; fails: boolean }>();
  const video: ModelInstance["video"] = {
    pollIntervalMs: 10,
    async submit(req) {
      failure();
      const handle = `job_${req.jobId}`;
      jobs.set(handle, { polls: 0, fails: upstream.jobFails === true });
      return { handle: variant === "numeric-handle" ? (7 as never) : handle };
    },
    async poll(handle): Promise<VideoPollResult> {
      const job = jobs.get(handle);
      if (!job) return { state: "lost" };
      if (job.fails) return { state: "failed", code: "content_policy", message: "refused", retryable: variant === "permanent-failure-retried" };
      if (job.polls++ < 2) return { state: "running", progress: variant === "progress-percent" ? 50 * job.polls : 0.5 * job.polls };
      return { state: "succeeded", mp4: variant === "not-an-mp4" ? new TextEncoder().encode("<html>502 Bad Gateway</html>") : FTYP };
    },
    async cancel(handle) {
      jobs.delete(handle);
    },
  };

  return definePlugin({
    name: `broken-${variant}`,
    create: (ctx) =>
      ctx.modelId === "video" ? { video }
      : ctx.modelId === "embeddings" ? { embeddings: { supportsDimensions: false, async embed(req) { failure(); return { data: req.inputs.map((_, index) => ({ index, embedding: [1, 0] })), usage: { prompt_tokens: 3 } }; } } }
      : { chat },
  });
}
