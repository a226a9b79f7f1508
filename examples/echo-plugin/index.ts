/**
 * echo-plugin: a complete, small external reelay plugin to copy (docs/writing-a-plugin.md).
 *
 * - model `echo` (chat): answers with the last user message, prefixed; streams it word by word.
 * - model `solid-colour` (video): an MP4 of one colour picked from the prompt, encoded by the host.
 *
 * It imports only the SDK, and only for types plus two tiny helpers that the bundler inlines, so
 *   bun build examples/echo-plugin/index.ts --outfile plugins/echo-plugin.js --target bun --format esm
 * gives one .js file with no imports left. Everything else comes from `ctx`.
 *
 * Options (per model, all optional): `prefix` (chat, default "echo: "), `chunkDelayMs` (chat
 * streaming, default 0), `renderMs` (video: minimum time a job stays running, default 0).
 */
import { definePlugin, PluginError, type ChatCapability, type ModelInstance, type PluginContext, type VideoCapability, type VideoPollResult } from "../../src/plugin-sdk/index.ts";

export default definePlugin({
  name: "echo-plugin",
  models: [
    { id: "echo", pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 256, contextLength: 4096, ownedBy: "example" },
    { id: "solid-colour", pricing: { perSecond: 1_000 }, ownedBy: "example" },
  ],
  validateOptions(o) {
    const problems: string[] = [];
    for (const k of Object.keys(o)) if (!["prefix", "chunkDelayMs", "renderMs"].includes(k)) problems.push(`unknown option "${k}"`);
    if (o.prefix !== undefined && typeof o.prefix !== "string") problems.push(`"prefix" must be a string`);
    for (const k of ["chunkDelayMs", "renderMs"]) {
      if (o[k] !== undefined && !(Number.isInteger(o[k]) && (o[k] as number) >= 0)) problems.push(`"${k}" must be a non-negative integer`);
    }
    return problems;
  },
  create(ctx: PluginContext): ModelInstance {
    // one plugin, two kinds of model: the model id decides which capability this instance gets
    return ctx.modelId === "solid-colour" ? { video: solidColour(ctx) } : { chat: echo(ctx) };
  },
});

/* ------------------------------------------------------------------ chat */

function echo(ctx: PluginContext): ChatCapability {
  const prefix = typeof ctx.options.prefix === "string" ? ctx.options.prefix : "echo: ";
  const chunkDelayMs = Number(ctx.options.chunkDelayMs ?? 0);

  const reply = (body: Record<string, unknown>) => {
    const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: string; content?: unknown }>) : [];
    if (!messages.length) throw new PluginError("invalid_request", "messages must be a non-empty array", { param: "messages" });
    const lastUser = [...messages].reverse().find((m) => m.role === "user");
    const words = (prefix + (typeof lastUser?.content === "string" ? lastUser.content : "")).split(/(?<=\s)/);
    const max = typeof body.max_tokens === "number" ? body.max_tokens : typeof body.max_completion_tokens === "number" ? body.max_completion_tokens : Infinity;
    const kept = words.slice(0, max);
    const prompt_tokens = messages.reduce((n, m) => n + 3 + ctx.host.countTokens(typeof m.content === "string" ? m.content : ""), 3);
    const text = kept.join("");
    return { text, chunks: kept, finish: kept.length < words.length ? "length" : "stop", usage: { prompt_tokens, completion_tokens: ctx.host.countTokens(text), total_tokens: 0 } };
  };
  const header = () => ({ id: `chatcmpl-${crypto.randomUUID()}`, created: Math.floor(Date.now() / 1000), model: ctx.modelId });

  return {
    async complete(body, { signal }) {
      signal.throwIfAborted();
      const r = reply(body);
      r.usage.total_tokens = r.usage.prompt_tokens + r.usage.completion_tokens;
      const completion = { ...header(), object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: r.text }, finish_reason: r.finish }], usage: r.usage };
      return { completion, usage: r.usage };
    },
    async stream(body, { signal }) {
      signal.throwIfAborted();
      const r = reply(body);
      r.usage.total_tokens = r.usage.prompt_tokens + r.usage.completion_tokens;
      const h = header();
      const event = (json: unknown) => ({ data: JSON.stringify(json), json });
      return (async function* () {
        yield event({ ...h, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
        for (const piece of r.chunks) {
          if (chunkDelayMs) await new Promise((res) => setTimeout(res, chunkDelayMs));
          signal.throwIfAborted();
          yield event({ ...h, object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
        }
        yield event({ ...h, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: r.finish }] });
        // usage last, like OpenAI with stream_options.include_usage (the host bills from it)
        yield event({ ...h, object: "chat.completion.chunk", choices: [], usage: r.usage });
        yield { data: "[DONE]" };
      })();
    },
  };
}

/* ----------------------------------------------------------------- video */

function solidColour(ctx: PluginContext): VideoCapability {
  const renderMs = Number(ctx.options.renderMs ?? 0);
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
      const frames = Array.from({ length: req.seconds * 8 }, () => frame);
      const started = Date.now();
      ctx.host.encodeMp4(frames, { width: req.width, height: req.height, fps: 8 })
        .then(async (mp4) => {
          await new Promise((res) => setTimeout(res, Math.max(0, renderMs - (Date.now() - started))));
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
