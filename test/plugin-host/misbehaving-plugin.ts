/**
 * An external plugin that does, on request, everything a plugin can do wrong — and every error
 * kind. Bundled on its own by the tests (it carries its own copy of the SDK, as a provider's build
 * does), then loaded from a plugins directory by a real server. What it does is read from the
 * request: chat from the last user message, embeddings from the first input, video from the prompt.
 *
 *   "throw <kind> [status]"   throw new PluginError(kind, …, { status })
 *   "crash"                   throw a TypeError (a bug)
 *   "usage-string" | "usage-nan" | "usage-negative" | "usage-too-many" | "undefined" | "no-choices"
 *   "ok"                      a good answer, usage returned, the call's request id logged
 * streams: "stream-throw-first <kind> [status]", "stream-no-json", "stream-text", "stream-break", "stream-crash-mid"
 * video:   "handle-number", "html-mp4", "progress-percent", "fail-permanent", "poll-throw <kind> [status]", "url <url>", "ok"
 * secrets (the value of the env var named by option `secretEnv`, as an upstream echoing its key would):
 *   chat "leak-throw" (in an error message), "leak-stream" (in a streamed chunk), "leak-log" (in its
 *   log line and fields); video "leak-fail" (in a failed job's message), "leak-throw" at submit
 * Every submit and poll is appended to the file in option `record` (calls are counted by the tests).
 */
import { appendFileSync } from "node:fs";
import { chatChunks, definePlugin, PluginError, Type, type ChatCompletionRequest, type PluginErrorKind, type VideoRequest } from "@reelay/plugin-sdk";

const FTYP = Uint8Array.of(0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65);

function thrown(words: string[]): never {
  const [, kind, status] = words;
  throw new PluginError(kind as PluginErrorKind, `misbehaving: ${kind}${status ? ` ${status}` : ""}`, { status: status ? Number(status) : undefined, code: kind === "failed" ? "content_policy" : undefined });
}

const said = (body: ChatCompletionRequest) => {
  const m = body.messages.at(-1);
  return typeof m?.content === "string" ? m.content : "";
};

export default definePlugin({
  name: "misbehaving",
  options: Type.Object({ record: Type.Optional(Type.String()), secretEnv: Type.Optional(Type.String()) }),
  models: [
    { id: "mis-chat", pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 64 },
    { id: "mis-chat-nostream", pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 64 },
    { id: "mis-emb", pricing: { inputPerMillion: 1_000_000 } },
    { id: "mis-video", pricing: { perSecond: 10_000 } },
  ],
  create(ctx) {
    const record = (line: string) => ctx.options.record && appendFileSync(ctx.options.record, line + "\n");
    const secret = ctx.options.secretEnv ? ctx.env(ctx.options.secretEnv) ?? "" : "";
    const leak = () => new PluginError("upstream_http", `upstream answered 401: {"error":"bad key","received":"Authorization: Bearer ${secret}"}`, { status: 401 });
    const answer = (body: ChatCompletionRequest) => {
      const words = said(body).split(" ");
      const out = chatChunks({ model: ctx.modelId });
      const usage = { prompt_tokens: 5, completion_tokens: 2 };
      switch (words[0]) {
        case "throw": thrown(words);
        case "crash": throw new TypeError("undefined is not an object (evaluating 'o.x.y')");
        case "leak-throw": throw leak();
        case "usage-string": return { completion: out.completion({ content: "hi there" }, "stop"), usage: { prompt_tokens: "5", completion_tokens: "2" } as never };
        case "usage-nan": return { completion: out.completion({ content: "hi there" }, "stop"), usage: { prompt_tokens: 5, completion_tokens: NaN } };
        case "usage-negative": return { completion: out.completion({ content: "hi there" }, "stop"), usage: { prompt_tokens: 5, completion_tokens: -2 } };
        case "usage-too-many": return { completion: out.completion({ content: "hi there" }, "stop"), usage: { prompt_tokens: 5, completion_tokens: 10_000 } };
        case "undefined": return undefined as never;
        case "no-choices": return { completion: { ...out.completion({ content: "x" }, "stop"), choices: [] }, usage };
      }
      return { completion: out.completion({ content: "hi there" }, "stop"), usage };
    };

    if (ctx.modelId === "mis-chat" || ctx.modelId === "mis-chat-nostream") {
      const complete = async (body: ChatCompletionRequest, call: { logger: { info(m: string, f?: Record<string, unknown>): void; warn(m: string, f?: Record<string, unknown>): void } }) => {
        call.logger.info("misbehaving chat called", { requestId: "forged-by-plugin", plugin: "forged", mode: said(body) });
        if (said(body) === "leak-log") call.logger.warn(`calling upstream with key ${secret}`, { headers: { authorization: `Bearer ${secret}` }, key: secret });
        return answer(body);
      };
      if (ctx.modelId === "mis-chat-nostream") return { chat: { complete } };
      return {
        chat: {
          complete,
          async stream(body) {
            const words = said(body).split(" ");
            const out = chatChunks({ model: ctx.modelId });
            if (words[0] === "stream-throw-first") thrown(words);
            return (async function* () {
              if (words[0] === "stream-no-json") {
                yield { data: JSON.stringify({ choices: [{ index: 0, delta: { content: "hi" } }] }) } as never;
                yield { data: JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } }) } as never;
                yield out.done();
                return;
              }
              if (words[0] === "stream-text") {
                yield { data: "hello, not JSON", json: { choices: [] } } as never;
                return;
              }
              yield out.role();
              if (words[0] === "leak-stream") yield out.delta(`the key is ${secret} `);
              yield out.delta("hi ");
              yield out.delta("there");
              if (words[0] === "stream-break") throw new PluginError("stream_interrupted", "misbehaving: the connection dropped after 2 chunks");
              if (words[0] === "stream-crash-mid") throw new TypeError("boom mid-stream");
              yield out.finish("stop");
              yield out.usage({ prompt_tokens: 5, completion_tokens: 2 });
              yield out.done();
            })();
          },
        },
      };
    }

    if (ctx.modelId === "mis-emb") {
      return {
        embeddings: {
          supportsDimensions: false,
          async embed(req) {
            const words = req.inputs[0]!.split(" ");
            const data = req.inputs.map((_, index) => ({ index, embedding: [0.6, 0.8] }));
            switch (words[0]) {
              case "throw": thrown(words);
              case "crash": throw new TypeError("boom");
              case "usage-string": return { data, usage: { prompt_tokens: "7" } as never };
              case "wrong-count": return { data: data.slice(1), usage: { prompt_tokens: 3 } };
              case "undefined": return undefined as never;
            }
            return { data, usage: { prompt_tokens: 3 } };
          },
        },
      };
    }

    const jobs = new Map<string, VideoRequest>();
    return {
      video: {
        pollIntervalMs: 20,
        maxConcurrency: 8,
        async submit(req) {
          record(`submit ${req.jobId}`);
          const words = req.prompt.split(" ");
          if (words[0] === "throw") thrown(words);
          if (words[0] === "leak-throw") throw leak();
          if (words[0] === "handle-number") return { handle: 42 as never };
          const handle = `h_${crypto.randomUUID()}`;
          jobs.set(handle, req);
          return { handle };
        },
        async poll(handle) {
          const req = jobs.get(handle);
          if (!req) return { state: "lost" };
          record(`poll ${req.jobId}`);
          const words = req.prompt.split(" ");
          switch (words[0]) {
            case "poll-throw": thrown(words);
            case "html-mp4": return { state: "succeeded", mp4: new TextEncoder().encode("<html><body>502 Bad Gateway</body></html>") };
            case "progress-percent": return { state: "running", progress: 50 };
            case "fail-permanent": return { state: "failed", code: "content_policy", message: "the prompt was refused by the content policy", retryable: false };
            case "leak-fail": return { state: "failed", code: "worker_failed", message: `worker crashed; env: API_KEY=${secret}`, retryable: false };
            case "url": return { state: "succeeded", url: words[1]! };
          }
          return { state: "succeeded", mp4: FTYP };
        },
        async cancel(handle) {
          record(`cancel ${jobs.get(handle)?.jobId}`);
        },
      },
    };
  },
});
