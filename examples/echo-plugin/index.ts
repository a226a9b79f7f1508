/**
 * echo-plugin: the smallest complete external reelay plugin (docs/writing-a-plugin.md).
 *
 * - model `echo` (chat): answers with the last user message, prefixed; streams it word by word.
 * - model `solid-colour` (video): an MP4 of one colour picked from the prompt, encoded by the host.
 *
 * It imports only @reelay/plugin-sdk, which the bundler inlines, so
 *   bun build examples/echo-plugin/index.ts --outfile plugins/echo-plugin.js --target bun --format esm
 * gives one .js file with no imports left. Everything else comes from `ctx`.
 *
 * Options (per model, all optional): `prefix` (chat, default "echo: "), `chunkDelayMs` (chat
 * streaming, default 0), `renderMs` (video: minimum time a job stays running, default 0).
 */
import { chatChunks, definePlugin, PluginError, Type, type ChatCapability, type ChatCompletionRequest, type PluginContext, type Static, type VideoCapability, type VideoPollResult } from "@reelay/plugin-sdk";

const Options = Type.Object({
  prefix: Type.String({ default: "echo: " }),
  chunkDelayMs: Type.Integer({ minimum: 0, maximum: 10_000, default: 0 }),
  renderMs: Type.Integer({ minimum: 0, maximum: 600_000, default: 0 }),
}, { additionalProperties: false });
type Options = Static<typeof Options>;

export default definePlugin({
  name: "echo-plugin",
  models: [
    { id: "echo", pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 256, contextLength: 4096, ownedBy: "example" },
    { id: "solid-colour", pricing: { perSecond: 1_000 }, ownedBy: "example" },
  ],
  options: Options,
  create(ctx) {
    // one plugin, two kinds of model: the model id decides which capability this instance gets
    return ctx.modelId === "solid-colour" ? { video: solidColour(ctx) } : { chat: echo(ctx) };
  },
});

/* ------------------------------------------------------------------ chat */

function echo(ctx: PluginContext<Options>): ChatCapability {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** the reply's words, as many as max_tokens allows (counted with the host's tokenizer, which bills) */
  const reply = (body: ChatCompletionRequest) => {
    const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
    if (!lastUser) throw new PluginError("invalid_request", "the messages have no user message to echo", { param: "messages" });
    const said = typeof lastUser.content === "string" ? lastUser.content : lastUser.content.map((p) => (p.type === "text" ? p.text : "")).join("");
    const words = (ctx.options.prefix + said).split(/(?<=\s)/);
    const max = body.max_completion_tokens ?? body.max_tokens ?? Infinity;
    const kept: string[] = [];
    for (const w of words) {
      if (ctx.host.countTokens(kept.join("") + w) > max) break;
      kept.push(w);
    }
    const text = kept.join("");
    const prompt_tokens = body.messages.reduce((n, m) => n + 3 + ctx.host.countTokens(typeof m.content === "string" ? m.content : ""), 3);
    return { kept, text, finish: kept.length < words.length ? ("length" as const) : ("stop" as const), usage: { prompt_tokens, completion_tokens: ctx.host.countTokens(text) } };
  };

  return {
    async complete(body, { signal }) {
      signal.throwIfAborted();
      const r = reply(body);
      const out = chatChunks({ model: ctx.modelId });
      // `usage` is what reelay bills: our own count, so it goes in `usage` (not only in the completion)
      return { completion: out.completion({ content: r.text }, r.finish, r.usage), usage: r.usage };
    },
    async stream(body, { signal, logger }) {
      signal.throwIfAborted();
      const r = reply(body); // everything that can fail fails here, before the first event
      const out = chatChunks({ model: ctx.modelId });
      logger.debug("echoing", { words: r.kept.length });
      return (async function* () {
        yield out.role();
        let sent = "";
        for (const piece of r.kept) {
          if (ctx.options.chunkDelayMs) await sleep(ctx.options.chunkDelayMs);
          signal.throwIfAborted();
          sent += piece;
          // running usage on each chunk: a client that leaves midway is billed in our own count
          yield out.delta(piece, { usage: { prompt_tokens: r.usage.prompt_tokens, completion_tokens: ctx.host.countTokens(sent) } });
        }
        yield out.finish(r.finish);
        yield out.usage(r.usage); // choices: [] — shown only to clients that asked for include_usage
        yield out.done();
      })();
    },
  };
}

/* ----------------------------------------------------------------- video */

function solidColour(ctx: PluginContext<Options>): VideoCapability {
  // in-memory only: after a reelay restart the host polls, gets "lost" and submits again
  const jobs = new Map<string, { result?: VideoPollResult; cancelled?: boolean }>();

  return {
    maxConcurrency: 2,
    pollIntervalMs: 200,
    async submit(req) {
      const handle = `solid_${crypto.randomUUID()}`;
      const job: { result?: VideoPollResult; cancelled?: boolean } = {};
      jobs.set(handle, job);
      const [r, g, b] = colourOf(req.prompt);
      const frame = new Uint8Array(req.width * req.height * 4);
      for (let i = 0; i < frame.length; i += 4) frame.set([r, g, b, 255], i);
      const started = Date.now();
      // the host encodes on its own worker thread; one frame buffer, repeated (the host copies each)
      ctx.host.encodeMp4(Array.from({ length: req.seconds * 8 }, () => frame), { width: req.width, height: req.height, fps: 8 })
        .then(async (mp4) => {
          await new Promise((res) => setTimeout(res, Math.max(0, ctx.options.renderMs - (Date.now() - started))));
          if (!job.cancelled) job.result = { state: "succeeded", mp4 };
        })
        .catch((err) => { job.result = { state: "failed", code: "encode_failed", message: String((err as Error).message ?? err) }; });
      return { handle };
    },
    async poll(handle) {
      const job = jobs.get(handle);
      if (!job) return { state: "lost" };
      if (job.cancelled) return { state: "failed", code: "cancelled", message: "cancelled" };
      if (!job.result) return { state: "running" };
      jobs.delete(handle); // handed over once: the host stores it
      return job.result;
    },
    async cancel(handle) {
      const job = jobs.get(handle);
      if (job) job.cancelled = true;
    },
  };
}

/** A stable colour per prompt (FNV-1a hash). */
function colourOf(prompt: string): [number, number, number] {
  let h = 0x811c9dc5;
  for (let i = 0; i < prompt.length; i++) h = Math.imul(h ^ prompt.charCodeAt(i), 0x01000193);
  return [h & 0xff, (h >>> 8) & 0xff, (h >>> 16) & 0xff];
}
