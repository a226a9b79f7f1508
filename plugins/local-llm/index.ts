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
import {
  PLUGIN_API_VERSION, PluginError,
  type ChatCapability, type ChatStreamEvent, type ModelInstance, type PluginContext, type ReelayPlugin,
} from "../../src/plugin-sdk/index.ts";
import { parseChatRequest, type ChatParams } from "./chat-request.ts";
import { generate, type FinishReason, type GenerationStats } from "./generate.ts";
import { loadModelFile, sharedLlama } from "./load-llama.ts";
import { chunkEvent, completionObject, DONE_EVENT, newAnswer, usageEvent, usageOf } from "./openai-shapes.ts";
import { parseOptions, validateOptions } from "./options.ts";
import { promptRenderer, type Prompt, type PromptRenderer } from "./prompt.ts";
import { SequencePool } from "./sequence-pool.ts";

export { validateOptions } from "./options.ts";

/** Context per request when `contextSize` is not set: the model's training context, at most this (KV cache memory grows with it). */
const DEFAULT_MAX_CONTEXT = 4096;

export const STORIES_DESCRIPTION =
  "stories260K: a 260K-parameter Llama trained on TinyStories, running inside reelay. It writes short children's stories " +
  "(send the start of a story, e.g. \"Once upon a time\"); it does not follow instructions or answer questions. " +
  "For real use, configure a local-llm model with modelPath pointing at a chat GGUF.";

export default {
  name: "local-llm",
  apiVersion: PLUGIN_API_VERSION,
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
} satisfies ReelayPlugin;

async function create(ctx: PluginContext): Promise<ModelInstance> {
  const problems = validateOptions(ctx.options);
  if (problems.length) throw new Error(`local-llm options: ${problems.join("; ")}`);
  const opts = parseOptions(ctx.options);
  const started = performance.now();
  const llama = await sharedLlama((level, msg) => ctx.logger[level](`llama.cpp: ${msg}`));
  const model = await loadModelFile(llama, opts.modelPath);
  let context: LlamaContext;
  let prompts: PromptRenderer;
  try {
    context = await model.createContext({
      contextSize: opts.contextSize ?? Math.min(model.trainContextSize, DEFAULT_MAX_CONTEXT),
      sequences: opts.parallel,
      threads: opts.threads,
    });
    prompts = promptRenderer(model, opts.promptFormat);
  } catch (err) {
    await model.dispose();
    throw err;
  }
  const sequences = Array.from({ length: opts.parallel }, () => context.getSequence());
  const pool = new SequencePool(sequences, opts.maxQueue, (s) => s.clearHistory());
  ctx.logger.info("local model loaded", {
    modelPath: opts.modelPath ?? "(embedded stories260K)", contextSize: context.contextSize, parallel: opts.parallel, maxQueue: opts.maxQueue,
    threads: opts.threads, promptFormat: prompts.format, chatWrapper: prompts.wrapper, ms: Math.round(performance.now() - started),
  });

  const closing = new AbortController();
  let closed: Promise<void> | undefined;
  const chat = chatCapability({ ctx, model, prompts, pool, contextSize: context.contextSize, closing: closing.signal });
  return {
    chat,
    close() {
      closed ??= (async () => {
        closing.abort(new PluginError("overloaded", "the model is shutting down", { code: "model_unavailable" }));
        pool.close();
        await context.dispose();
        await model.dispose();
      })();
      return closed;
    },
  };
}

interface ChatDeps {
  ctx: PluginContext;
  model: LlamaModel;
  prompts: PromptRenderer;
  pool: SequencePool<LlamaContextSequence>;
  contextSize: number;
  closing: AbortSignal;
}

interface Job {
  params: ChatParams;
  prompt: Prompt;
  /** most tokens this answer may have */
  limit: number;
  signal: AbortSignal;
  stats: GenerationStats;
  started: number;
}

function chatCapability(d: ChatDeps): ChatCapability {
  /** Everything that can be refused is refused here, before the request waits for a sequence. */
  const prepare = (body: Record<string, unknown>, signal: AbortSignal): Job => {
    const params = parseChatRequest(body);
    const prompt = d.prompts.render(params.messages);
    const room = d.contextSize - prompt.tokens.length;
    if (room <= 0) {
      throw new PluginError("invalid_request", `This model's context is ${d.contextSize} tokens per request; the messages are ${prompt.tokens.length} tokens. Shorten them.`, {
        param: "messages", code: "context_length_exceeded",
      });
    }
    const limit = Math.min(params.maxTokens ?? Infinity, d.ctx.model.maxOutputTokens ?? Infinity, room);
    return { params, prompt, limit, signal: AbortSignal.any([signal, d.closing]), stats: { completionTokens: 0, afterAbort: 0 }, started: performance.now() };
  };

  const run = (job: Job, sequence: LlamaContextSequence) =>
    generate(d.model, sequence, job.prompt, { sampling: job.params.sampling, stop: job.params.stop, maxTokens: job.limit, signal: job.signal, stats: job.stats });

  const report = (job: Job, finishReason: FinishReason | null) => {
    const fields = { promptTokens: job.prompt.tokens.length, completionTokens: job.stats.completionTokens, finishReason, ms: Math.round(performance.now() - job.started) };
    if (finishReason) d.ctx.logger.debug("generation finished", fields);
    else d.ctx.logger.info("generation stopped: the request was aborted", { ...fields, tokensAfterAbort: job.stats.afterAbort });
  };

  return {
    async complete(body, { signal }) {
      const job = prepare(body, signal);
      const lease = await d.pool.acquire(job.signal);
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
      return { completion: completionObject(newAnswer(d.ctx.modelId), content, finishReason!, usage), usage };
    },

    async stream(body, { signal }) {
      return streamEvents(prepare(body, signal));
    },
  };

  /** The sequence is taken at the first pull, so an iterator that is never read holds nothing. */
  async function* streamEvents(job: Job): AsyncGenerator<ChatStreamEvent> {
    const lease = await d.pool.acquire(job.signal);
    const prompt = job.prompt.tokens.length;
    const answer = newAnswer(d.ctx.modelId);
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

