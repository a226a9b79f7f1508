/**
 * local-llm: chat completions from a GGUF model run in process by llama.cpp (node-llama-cpp, CPU).
 * With no options it serves the embedded stories260K, a 260K-parameter model that writes short
 * children's stories (models/README.md); `modelPath` points it at any GGUF (e.g. a Llama 3 8B
 * Instruct Q4_K_M) with the same code.
 *
 * Options (options.ts): `modelPath`, `contextSize` (tokens per request), `parallel` (requests decoded
 * at once, one context sequence each), `maxQueue` (requests waiting beyond that; one more → 503),
 * `threads`, `promptFormat` ("auto" | "template" | "plain", see prompt.ts).
 *
 * Answers are OpenAI's shapes (openai-shapes.ts); usage is counted in the model's own tokens.
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { definePlugin, PluginError, type Static, type ChatCapability, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type PluginContext } from "@reelay/plugin-sdk";
import { parseChatRequest, type ChatParams } from "./chat-request.ts";
import { generate, type FinishReason, type GenerationStats } from "./generate.ts";
import { chunkEvent, completionObject, DONE_EVENT, newAnswer, usageEvent, usageOf } from "./openai-shapes.ts";
import { LocalLlmOptions, parseOptions, validateOptions } from "./options.ts";
import type { Prompt, PromptRenderer } from "./prompt.ts";
import { SequencePool } from "./sequence-pool.ts";

export { validateOptions } from "./options.ts";

/** Context per request when `contextSize` is not set: the model's training context, at most this (KV cache memory grows with it). */
const DEFAULT_MAX_CONTEXT = 4096;

export const STORIES_DESCRIPTION =
  "stories260K: a 260K-parameter Llama trained on TinyStories, running inside reelay. It writes short children's stories " +
  "(send the start of a story, e.g. \"Once upon a time\"); it does not follow instructions or answer questions. " +
  "For real use, configure a local-llm model with modelPath pointing at a chat GGUF.";

export default definePlugin({
  name: "local-llm",
  options: LocalLlmOptions,
  models: [
    {
      id: "stories260k",
      // $0.01 / $0.02 per million tokens: a token on one core of a laptop costs about nothing
      pricing: { inputPerMillion: 10_000, outputPerMillion: 20_000 },
      // trained on 512-token sequences: a longer context only produces noise
      options: { contextSize: 512, parallel: 4 },
      contextLength: 512,
      maxOutputTokens: 256,
      ownedBy: "reelay",
      description: STORIES_DESCRIPTION,
    },
  ],
  validateOptions,
  create,
});

/** Cheap: options only. llama.cpp, the weights and the context sequences come in `load`. */
function create(ctx: PluginContext<Static<typeof LocalLlmOptions>>): ModelInstance {
  const opts = parseOptions(ctx.options);
  const closing = new AbortController();
  let loaded: Loaded | undefined;
  let closed: Promise<void> | undefined;
  const chat = chatCapability(ctx, () => {
    if (!loaded) throw new Error("local-llm: chat before load");
    return loaded;
  }, closing.signal);
  return {
    chat,
    async load({ signal }) {
      const model = await loadModel(ctx, opts);
      if (signal.aborted || closing.signal.aborted) {
        await disposeLoaded(model);
        throw new Error("local-llm: closed while loading");
      }
      loaded = model;
    },
    close() {
      closed ??= (async () => {
        closing.abort(new PluginError("overloaded", "the model is shutting down", { code: "model_unavailable" }));
        if (loaded) await disposeLoaded(loaded);
      })();
      return closed;
    },
  };
}

interface Loaded {
  model: LlamaModel;
  context: LlamaContext;
  prompts: PromptRenderer;
  pool: SequencePool<LlamaContextSequence>;
  /** tokens per request (prompt + answer), as the context was created */
  contextSize: number;
}

async function loadModel(ctx: PluginContext, opts: LocalLlmOptions): Promise<Loaded> {
  const started = performance.now();
  // node-llama-cpp is imported here, not at the top: evaluating it took 133 ms and 11 MB at start
  // (bench/foundation.ts), which a server that never gets a chat request should not pay
  const [{ loadModelFile, sharedLlama }, { promptRenderer }] = await Promise.all([import("./load-llama.ts"), import("./prompt.ts")]);
  const llama = await sharedLlama((level, msg) => ctx.logger[level](`llama.cpp: ${msg}`));
  const model = await loadModelFile(llama, opts.modelPath);
  try {
    const context = await model.createContext({
      contextSize: opts.contextSize ?? Math.min(model.trainContextSize, DEFAULT_MAX_CONTEXT),
      sequences: opts.parallel,
      threads: opts.threads,
    });
    const prompts = promptRenderer(model, opts.promptFormat);
    const sequences = Array.from({ length: opts.parallel }, () => context.getSequence());
    const pool = new SequencePool(sequences, opts.maxQueue, (s) => s.clearHistory());
    ctx.logger.info("local model loaded", {
      modelPath: opts.modelPath ?? "(embedded stories260K)", contextSize: context.contextSize, parallel: opts.parallel, maxQueue: opts.maxQueue,
      threads: opts.threads, promptFormat: prompts.format, chatWrapper: prompts.wrapper, ms: Math.round(performance.now() - started),
    });
    return { model, context, prompts, pool, contextSize: context.contextSize };
  } catch (err) {
    await model.dispose();
    throw err;
  }
}

async function disposeLoaded(l: Loaded): Promise<void> {
  l.pool.close();
  await l.context.dispose();
  await l.model.dispose();
}

interface Job {
  d: Loaded;
  params: ChatParams;
  prompt: Prompt;
  /** most tokens this answer may have */
  limit: number;
  signal: AbortSignal;
  stats: GenerationStats;
  started: number;
}

function chatCapability(ctx: PluginContext, get: () => Loaded, closing: AbortSignal): ChatCapability {
  /** Everything that can be refused is refused here, before the request waits for a sequence. */
  const prepare = (body: ChatCompletionRequest, signal: AbortSignal): Job => {
    const d = get();
    const params = parseChatRequest(body);
    const prompt = d.prompts.render(params.messages);
    const room = d.contextSize - prompt.tokens.length;
    if (room <= 0) {
      throw new PluginError("invalid_request", `This model's context is ${d.contextSize} tokens per request; the messages are ${prompt.tokens.length} tokens. Shorten them.`, {
        param: "messages", code: "context_length_exceeded",
      });
    }
    const limit = Math.min(params.maxTokens ?? Infinity, ctx.model.maxOutputTokens ?? Infinity, room);
    return { d, params, prompt, limit, signal: AbortSignal.any([signal, closing]), stats: { completionTokens: 0, afterAbort: 0 }, started: performance.now() };
  };

  const run = (job: Job, sequence: LlamaContextSequence) =>
    generate(job.d.model, sequence, job.prompt, { sampling: job.params.sampling, stop: job.params.stop, maxTokens: job.limit, signal: job.signal, stats: job.stats });

  const report = (job: Job, finishReason: FinishReason | null) => {
    const fields = { promptTokens: job.prompt.tokens.length, completionTokens: job.stats.completionTokens, finishReason, ms: Math.round(performance.now() - job.started) };
    if (finishReason) ctx.logger.debug("generation finished", fields);
    else ctx.logger.info("generation stopped: the request was aborted", { ...fields, tokensAfterAbort: job.stats.afterAbort });
  };

  return {
    countsTokens: true,
    async complete(body, { signal }) {
      const job = prepare(body, signal);
      const lease = await job.d.pool.acquire(job.signal);
      let content = "";
      let finishReason: FinishReason | null = null;
      try {
        for await (const ev of run(job, lease.sequence)) {
          if (ev.kind === "text") content += ev.text;
          else finishReason = ev.finishReason;
        }
      } finally {
        lease.release();
        report(job, finishReason);
      }
      const usage = usageOf(job.prompt.tokens.length, job.stats.completionTokens);
      return { completion: completionObject(newAnswer(ctx.modelId), content, finishReason!, usage), usage };
    },

    async stream(body, { signal }) {
      return streamEvents(prepare(body, signal));
    },
  };

  /** The sequence is taken at the first pull, so an iterator that is never read holds nothing. */
  async function* streamEvents(job: Job): AsyncGenerator<ChatStreamEvent> {
    const lease = await job.d.pool.acquire(job.signal);
    const prompt = job.prompt.tokens.length;
    const answer = newAnswer(ctx.modelId);
    let finishReason: FinishReason | null = null;
    const events = run(job, lease.sequence);
    // the prompt is decoded while the role chunk (and with it the response headers) goes out
    const first = events.next();
    first.catch(() => {});
    try {
      yield chunkEvent(answer, { role: "assistant", content: "" }, null, usageOf(prompt, 0));
      for (let r = await first; !r.done; r = await events.next()) {
        const ev = r.value;
        if (ev.kind === "text") yield chunkEvent(answer, { content: ev.text }, null, usageOf(prompt, ev.completionTokens));
        else {
          finishReason = ev.finishReason;
          const usage = usageOf(prompt, ev.completionTokens);
          yield chunkEvent(answer, {}, ev.finishReason, usage);
          yield usageEvent(answer, usage);
          yield DONE_EVENT;
        }
      }
    } finally {
      await events.return(undefined).catch(() => {}); // stops decoding when the consumer left early
      lease.release();
      report(job, finishReason);
    }
  }
}

