/**
 * A fake OpenAI-compatible upstream: a real HTTP server (node:http on a loopback port) for tests of
 * the openai-compatible plugin and of the chat / embeddings routes.
 *
 *   const fake = await startFakeOpenAI({ tokens: 8 });
 *   fake.url            // "http://127.0.0.1:<port>/v1" — use as baseUrl / the OpenAI SDK's baseURL
 *   fake.origin, fake.port
 *   fake.requests       // RecordedRequest[]: method, path, headers, parsed body, aborted/abortedAt
 *   fake.aborts         // { requestId, at } for every request the client abandoned before the end
 *   fake.behave(b)      // replace the default behaviour (FakeBehaviour below); { status: 429, retryAfter: 2 } adds Retry-After
 *   fake.behave(b, { model: "m" })  // behaviour only for requests whose body.model is "m"
 *   fake.inFlight, fake.peakInFlight   // requests open now / the most open at once (since reset)
 *   fake.reset()        // forget requests, aborts and behaviours
 *   await fake.waitForAbort(requestId?, timeoutMs?)  // resolves with the abort record
 *   await fake.stop()   // close the server and every open connection
 *
 * Per request, header `x-fake-behaviour: <FakeBehaviour as JSON>` overrides both (it is recorded
 * like any header). `fake.script(fn)` picks a behaviour from each request's body (a scripted
 * conversation, see scripted-chat.ts). Precedence: header > script > per-model > default.
 *
 * Endpoints: POST /v1/chat/completions (JSON, or SSE with `stream: true`), POST /v1/embeddings,
 * GET /v1/models. Anything else answers 404 with an OpenAI error body.
 *
 * Deterministic content. The reply has N = min(body.max_completion_tokens ?? body.max_tokens ?? 16,
 * behaviour.tokens ?? opts.tokens ?? 16) tokens: REPLY_WORDS cycled (" one", " two", …), each
 * exactly one token under both cl100k_base and o200k_base, also when concatenated (see the test).
 * Streamed, every content chunk carries exactly one word. finish_reason is "length" when N equals
 * the requested max, else "stop".
 *
 * Usage. prompt_tokens follows OpenAI's cookbook formula with cl100k_base: per message 3 + tokens
 * of each string value (role, content, name; content parts contribute their `text`) + 1 when `name`
 * is present, plus 3 for the reply priming. completion_tokens = N. Embeddings: prompt_tokens = sum
 * of cl100k_base tokens of the inputs (token-array inputs count their length). `cachedTokens` adds
 * `prompt_tokens_details: {cached_tokens}` (a prompt-cache hit, counted inside prompt_tokens).
 *
 * Streaming follows OpenAI: with `stream_options.include_usage` every chunk has `"usage": null`
 * and a last chunk `{choices: [], usage}` precedes `data: [DONE]`. Like vLLM, when also
 * `stream_options.continuous_usage_stats` is true every chunk carries the running usage.
 *
 * Scripted answers (for clients that need a particular reply): `reply` is sent as the content
 * instead of the counted words (cut at max tokens, finish_reason "length"; streamed one cl100k token
 * per chunk); `reasoning` comes first as `reasoning_content` (as vLLM's reasoning parsers and
 * DeepSeek send it; its tokens count as completion tokens, outside max tokens, and it also precedes
 * tool calls); `toolCalls` makes a request that offers `tools` answer with those calls (content null,
 * finish_reason "tool_calls"; streamed as OpenAI does: a first chunk per call with its id and name,
 * then the arguments in pieces), unless a `tool` result follows its last assistant message, which
 * gets the text answer. completion_tokens counts the cl100k tokens of the reply, or of each call's name + arguments.
 *
 * Embeddings are deterministic unit vectors seeded from a hash of (model, input); length
 * `body.dimensions ?? opts.dimensions ?? 8`; `encoding_format: "base64"` gives little-endian
 * float32 bytes in base64, like OpenAI.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";

export interface FakeBehaviour {
  /** cap on reply tokens (N = min(max_tokens ?? 16, tokens)) */
  tokens?: number;
  /** wait before sending the response headers */
  delayHeadersMs?: number;
  /** streaming: wait after the headers before the first chunk */
  delayFirstChunkMs?: number;
  /** streaming: wait between chunks */
  delayBetweenChunksMs?: number;
  /** answer with this HTTP status (4xx / 5xx) and an OpenAI error body */
  status?: number;
  errorMessage?: string;
  errorType?: string;
  errorCode?: string | null;
  /** streaming: close the connection mid-body after this many content chunks (the client's read fails) */
  dropAfterChunks?: number;
  /** streaming: send a non-JSON `data:` line after this many content chunks, then continue */
  garbageAfterChunks?: number;
  /** streaming: end the response cleanly after this many content chunks, without [DONE] */
  truncateAfterChunks?: number;
  /** no usage anywhere (JSON body, usage chunk, continuous usage) */
  omitUsage?: boolean;
  /**
   * hostile upstream: this raw JSON text is sent as every usage object (JSON body, usage chunk,
   * continuous usage), e.g. `{"prompt_tokens":12,"completion_tokens":1e400}`
   */
  usageJson?: string;
  /** never answer: hold the request open until the client goes away or stop() */
  hang?: boolean;
  /** hostile: quote the Authorization header received in error bodies and stream error events */
  echoAuthorization?: boolean;
  /** hostile: a non-streamed answer of about this many bytes (valid JSON, a huge content string), sent in 1 MiB writes */
  bodyBytes?: number;
  /** hostile: streaming, the first content event (or the one `eventBytesAt` says) carries about this many bytes, without a newline until its end */
  eventBytes?: number;
  /** with `eventBytes`: the index of the content event that is oversized (default 0: the first) */
  eventBytesAt?: number;
  /** streaming: after this many content chunks send an OpenAI-style error event and end the response */
  errorEventAfterChunks?: number;
  /** this text as the answer's content instead of the counted words (cut at max tokens, and before the first of the request's `stop` strings, named in the choice's `stop_reason` as vLLM does) */
  reply?: string;
  /** the field the reasoning is sent in (default `reasoning_content`; vLLM ≥ 0.10, Ollama and OpenRouter send `reasoning`) */
  reasoningField?: "reasoning_content" | "reasoning";
  /** `reasoning_content` before the answer (the reply, or the counted words when no reply is set) */
  reasoning?: string;
  /** answer a request that offers tools with these calls (unless a tool result follows its last assistant message) */
  toolCalls?: Array<{ name: string; arguments: string }>;
  /** answer with this status only the requests whose last message's content includes the text (one request of several) */
  failWhen?: { lastMessageIncludes: string; status: number };
  /** answer every request 200 with this text (an HTML error page from a proxy, say), not the protocol */
  garbageBody?: string;
  /** with `status`: send this Retry-After header (seconds) */
  retryAfter?: number;
  /** report this many of the prompt tokens as read from the prompt cache (`prompt_tokens_details.cached_tokens`, as given: may exceed the prompt) */
  cachedTokens?: number;
}

export interface RecordedRequest {
  id: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** parsed JSON body (undefined for GET or unparsable bodies) */
  body: any;
  receivedAt: number;
  /** the client went away before the response was complete */
  aborted: boolean;
  /** performance.now() when the server saw the abort */
  abortedAt?: number;
  /** the server finished sending the response */
  completed: boolean;
  /** the fake broke the connection itself (dropAfterChunks): its close is not a client abort */
  dropped?: boolean;
}

export interface FakeOpenAIOptions {
  /** fixed port (e.g. to restart on the same port); default 0 = any free port */
  port?: number;
  /** default reply length cap, default 16 */
  tokens?: number;
  /** default embedding length, default 8 */
  dimensions?: number;
  /** ids listed by GET /v1/models, default ["fake-model"] */
  models?: string[];
  /** initial default behaviour */
  behaviour?: FakeBehaviour;
}

export interface FakeOpenAI {
  url: string;
  origin: string;
  port: number;
  requests: RecordedRequest[];
  aborts: Array<{ requestId: number; at: number }>;
  /** requests open right now, and the most open at once since start or reset() */
  inFlight: number;
  peakInFlight: number;
  behave(b: FakeBehaviour, opts?: { model?: string }): void;
  /** a behaviour chosen per request from its parsed body (undefined: none); null removes it */
  script(fn: ((body: any) => FakeBehaviour | undefined) | null): void;
  reset(): void;
  waitForAbort(requestId?: number, timeoutMs?: number): Promise<{ requestId: number; at: number }>;
  stop(): Promise<void>;
}

/** Each is one token under cl100k_base and o200k_base, alone and concatenated. */
export const REPLY_WORDS = [" one", " two", " three", " four", " five", " six", " seven", " eight",
  " nine", " ten", " red", " green", " blue", " cat", " dog", " sun"] as const;

export function replyText(n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += REPLY_WORDS[i % REPLY_WORDS.length];
  return s;
}

const encoder = new Tiktoken(cl100k_base);

/** The fake's prompt_tokens (OpenAI cookbook formula, cl100k_base). */
export function fakePromptTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 3;
  for (const m of messages as Array<Record<string, unknown>>) {
    n += 3;
    for (const key of ["role", "content", "name"] as const) {
      const value = m?.[key];
      if (value === undefined || value === null) continue;
      n += encoder.encode(key === "content" ? contentText(value) : String(value)).length;
      if (key === "name") n += 1;
    }
  }
  return n;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
  return "";
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const aborts: Array<{ requestId: number; at: number }> = [];
  const abortWaiters = new Set<() => void>();
  let defaultBehaviour: FakeBehaviour = opts.behaviour ?? {};
  let perModel = new Map<string, FakeBehaviour>();
  let scripted: ((body: any) => FakeBehaviour | undefined) | null = null;
  let nextId = 1;
  const load = { inFlight: 0, peakInFlight: 0 };

  function markAborted(rec: RecordedRequest) {
    if (rec.aborted || rec.completed || rec.dropped) return;
    rec.aborted = true;
    rec.abortedAt = performance.now();
    aborts.push({ requestId: rec.id, at: rec.abortedAt });
    for (const w of abortWaiters) w();
  }

  // node:http rather than Bun.serve: Bun.serve sends the headers only with the first body byte,
  // and the plugin's connect / first-byte deadlines need the two apart (flushHeaders does that).
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
    const rec: RecordedRequest = {
      id: nextId++, method: req.method ?? "GET", path: url.pathname, headers,
      body: undefined, receivedAt: performance.now(), aborted: false, completed: false,
    };
    requests.push(rec);
    load.inFlight++;
    load.peakInFlight = Math.max(load.peakInFlight, load.inFlight);
    // "close" before the response finished = the client went away (abort, timeout, reset)
    res.on("close", () => {
      load.inFlight--;
      if (!res.writableFinished) markAborted(rec);
    });
    const raw = await readBody(req);
    let badJson = false;
    let b: FakeBehaviour = {};
    try { rec.body = raw ? JSON.parse(raw) : undefined; } catch { badJson = true; }
    const body = rec.body;
    const send = (status: number, json: unknown) => {
      if (res.destroyed) return;
      rec.completed = true;
      const extra: Record<string, string> = status >= 400 && b.retryAfter !== undefined ? { "retry-after": String(b.retryAfter) } : {};
      res.writeHead(status, { "content-type": "application/json", ...extra }).end(rawUsage(JSON.stringify(json), b));
    };
    if (badJson) return send(400, errorBody("We could not parse the JSON body of your request.", "invalid_request_error"));

    b = behaviourFor(headers["x-fake-behaviour"], body);
    if (b.hang) return; // nothing is ever written; "close" records the client giving up
    if (b.delayHeadersMs) await Bun.sleep(b.delayHeadersMs);
    const echo = b.echoAuthorization ? ` (request had Authorization: ${headers["authorization"] ?? "none"})` : "";
    const last = Array.isArray(body?.messages) ? body.messages.at(-1) : undefined;
    if (b.failWhen && typeof last?.content === "string" && last.content.includes(b.failWhen.lastMessageIncludes)) b = { ...b, status: b.failWhen.status };
    if (b.garbageBody !== undefined) {
      rec.completed = true;
      return void res.writeHead(200, { "content-type": "text/html" }).end(b.garbageBody);
    }
    if (b.status && b.status >= 400) {
      return send(b.status, errorBody((b.errorMessage ?? `fake upstream error ${b.status}`) + echo,
        b.errorType ?? (b.status >= 500 ? "server_error" : "invalid_request_error"), b.errorCode ?? null));
    }
    if (req.method === "POST" && url.pathname === "/v1/chat/completions") {
      if (!Array.isArray(body?.messages)) return send(400, errorBody("'messages' is a required property", "invalid_request_error", null, "messages"));
      if (body.stream === true) return streamChat(rec, res, body, b, echo);
      if (b.bodyBytes) return sendHuge(rec, res, chatCompletion(body, b), b.bodyBytes);
      return send(200, chatCompletion(body, b));
    }
    if (req.method === "POST" && url.pathname === "/v1/embeddings") return send(200, embeddings(body, b));
    if (req.method === "GET" && url.pathname === "/v1/models") {
      const data = (opts.models ?? ["fake-model"]).map((id) => ({ id, object: "model", created: 1700000000, owned_by: "fake" }));
      return send(200, { object: "list", data });
    }
    return send(404, errorBody(`Unknown request URL: ${req.method} ${url.pathname}`, "invalid_request_error", "unknown_url"));
  });
  server.requestTimeout = 0; // hang / long delays must not be cut by the server's own timers
  server.headersTimeout = 0;
  server.keepAliveTimeout = 1000;

  function behaviourFor(header: string | undefined, body: any): FakeBehaviour {
    const fromHeader: FakeBehaviour = header ? JSON.parse(header) : {};
    const byModel = typeof body?.model === "string" ? perModel.get(body.model) : undefined;
    return { ...defaultBehaviour, ...byModel, ...scripted?.(body), ...fromHeader };
  }

  /** the scripted text reply cut at the request's max, or null for the counted words */
  function scriptedReply(body: any, b: FakeBehaviour): { pieces: string[]; reasoning: string[]; max: number; stopped: string | null } | null {
    if (b.reply === undefined && b.reasoning === undefined) return null;
    const max = Number(body?.max_completion_tokens ?? body?.max_tokens ?? Infinity);
    let text = b.reply ?? replyText(Math.min(max, b.tokens ?? opts.tokens ?? 16));
    // stop strings, as vLLM: the reply ends before the first one, which the choice names in `stop_reason`
    let stopped: string | null = null;
    const stops: string[] = typeof body?.stop === "string" ? [body.stop] : Array.isArray(body?.stop) ? body.stop : [];
    for (const s of stops) {
      const at = text.indexOf(s);
      if (s !== "" && at >= 0 && (stopped === null || at < text.indexOf(stopped))) stopped = s;
    }
    if (stopped !== null) text = text.slice(0, text.indexOf(stopped));
    const tokens = encoder.encode(text);
    const reasoning = b.reasoning === undefined ? [] : encoder.encode(b.reasoning).map((t) => encoder.decode([t]));
    if (stopped !== null && tokens.length >= max) stopped = null;
    return { pieces: tokens.slice(0, max).map((t) => encoder.decode([t])), reasoning, max, stopped };
  }

  /** the scripted tool calls, when this request should get them */
  function scriptedCalls(body: any, b: FakeBehaviour) {
    const offered = Array.isArray(body?.tools) && body.tools.length > 0;
    // answered: a tool result follows the last assistant message (the client ran the calls)
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    const lastAssistant = messages.findLastIndex((m) => m?.role === "assistant");
    const afterResult = messages.slice(lastAssistant + 1).some((m) => m?.role === "tool");
    if (!b.toolCalls?.length || !offered || afterResult) return null;
    const calls = b.toolCalls.map((c, i) => ({ id: `call_fake${i}`, type: "function", function: { name: c.name, arguments: c.arguments } }));
    const reasoning = b.reasoning === undefined ? [] : encoder.encode(b.reasoning).map((t) => encoder.decode([t]));
    return { calls, reasoning, tokens: reasoning.length + b.toolCalls.reduce((n, c) => n + encoder.encode(c.name + c.arguments).length, 0) };
  }

  function replyLength(body: any, b: FakeBehaviour): { n: number; max: number } {
    const max = Number(body?.max_completion_tokens ?? body?.max_tokens ?? 16);
    return { n: Math.max(0, Math.min(max, b.tokens ?? opts.tokens ?? 16)), max };
  }

  function usage(body: any, completion: number, b: FakeBehaviour) {
    const prompt = fakePromptTokens(body.messages);
    // OpenAI counts prompt-cache hits inside prompt_tokens and names them in prompt_tokens_details (as given: a hostile count may exceed the prompt)
    const cached = b.cachedTokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: b.cachedTokens, audio_tokens: 0 } };
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...cached };
  }

  /** Put the behaviour's raw usage text in place of every usage object of a JSON text. */
  function rawUsage(text: string, b: FakeBehaviour): string {
    if (!b.usageJson) return text;
    return text.replace(/"usage":\{[^{}]*\}/g, `"usage":${b.usageJson}`);
  }

  function chatCompletion(body: any, b: FakeBehaviour) {
    const calls = scriptedCalls(body, b);
    if (calls) {
      return {
        id: "chatcmpl-fake", object: "chat.completion", created: 1700000000, model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: null, ...(b.reasoning !== undefined ? { [b.reasoningField ?? "reasoning_content"]: b.reasoning } : {}), tool_calls: calls.calls, refusal: null }, logprobs: null, finish_reason: "tool_calls" }],
        ...(b.omitUsage ? {} : { usage: usage(body, calls.tokens, b) }),
      };
    }
    const scripted = scriptedReply(body, b);
    if (scripted) {
      return {
        id: "chatcmpl-fake", object: "chat.completion", created: 1700000000, model: body.model,
        choices: [{
          index: 0, message: { role: "assistant", content: scripted.pieces.join(""), ...(b.reasoning !== undefined ? { [b.reasoningField ?? "reasoning_content"]: b.reasoning } : {}), refusal: null },
          logprobs: null, finish_reason: scripted.pieces.length === scripted.max ? "length" : "stop", ...(scripted.stopped !== null ? { stop_reason: scripted.stopped } : {}),
        }],
        ...(b.omitUsage ? {} : { usage: usage(body, scripted.reasoning.length + scripted.pieces.length, b) }),
      };
    }
    const { n, max } = replyLength(body, b);
    return {
      id: "chatcmpl-fake", object: "chat.completion", created: 1700000000, model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: replyText(n), refusal: null },
        logprobs: null, finish_reason: n === max ? "length" : "stop" }],
      ...(b.omitUsage ? {} : { usage: usage(body, n, b) }),
    };
  }

  /** `json` with its first message content padded to ~`bytes`, written in 1 MiB pieces with backpressure */
  async function sendHuge(rec: RecordedRequest, res: ServerResponse, json: any, bytes: number): Promise<void> {
    const text = JSON.stringify(json);
    const cut = text.indexOf('"content":"') + '"content":"'.length;
    res.writeHead(200, { "content-type": "application/json" });
    const block = "x".repeat(1024 * 1024);
    if (!(await writeAll(res, text.slice(0, cut)))) return;
    for (let sent = 0; sent < bytes; sent += block.length) if (!(await writeAll(res, block))) return;
    await writeAll(res, text.slice(cut));
    rec.completed = true;
    res.end();
  }

  async function streamChat(rec: RecordedRequest, res: ServerResponse, body: any, b: FakeBehaviour, echo = ""): Promise<void> {
    const { n, max } = replyLength(body, b);
    const includeUsage = body.stream_options?.include_usage === true && !b.omitUsage;
    // vLLM only sends per-chunk usage when include_usage is also set.
    const continuous = includeUsage && body.stream_options?.continuous_usage_stats === true;
    const base = { id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1700000000, model: body.model };
    const chunk = (choices: unknown[], sent: number) => JSON.stringify({
      ...base, choices,
      ...(continuous ? { usage: usage(body, sent, b) } : includeUsage ? { usage: null } : {}),
    });
    const write = (data: string) => { if (!res.destroyed) res.write(`data: ${rawUsage(data, b)}\n\n`); };
    const sleep = async (ms?: number) => { if (ms) await Bun.sleep(ms); return !res.destroyed; };

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    if (!(await sleep(b.delayFirstChunkMs))) return;
    const calls = scriptedCalls(body, b);
    const scripted = calls ? null : scriptedReply(body, b);
    if (calls || scripted) {
      const deltas: Array<Record<string, unknown>> = calls
        ? [...calls.reasoning.map((p) => ({ [b.reasoningField ?? "reasoning_content"]: p })), ...calls.calls.flatMap((c, i) => {
          const args = c.function.arguments;
          const third = Math.ceil(args.length / 3) || 1;
          const pieces = [args.slice(0, third), args.slice(third, 2 * third), args.slice(2 * third)].filter((p) => p !== "");
          return [
            { tool_calls: [{ index: i, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } }] },
            ...pieces.map((p) => ({ tool_calls: [{ index: i, function: { arguments: p } }] })),
          ];
        })].map((d, i) => (i === 0 ? { role: "assistant", content: null, ...d } : d))
        : [...scripted!.reasoning.map((p) => ({ [b.reasoningField ?? "reasoning_content"]: p })), ...scripted!.pieces.map((p) => ({ content: p }))].map((d, i) => (i === 0 ? { role: "assistant", ...d } : d));
      const completion = calls ? calls.tokens : scripted!.reasoning.length + scripted!.pieces.length;
      for (let i = 0; i < deltas.length; i++) {
        if (i > 0 && !(await sleep(b.delayBetweenChunksMs))) return;
        write(chunk([{ index: 0, delta: deltas[i], logprobs: null, finish_reason: null }], calls ? 0 : i + 1));
      }
      if (!(await sleep(b.delayBetweenChunksMs))) return;
      const finish = calls ? "tool_calls" : scripted!.pieces.length === scripted!.max ? "length" : "stop";
      const matched = scripted?.stopped ? { stop_reason: scripted.stopped } : {};
      write(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish, ...matched }], completion));
      if (includeUsage) write(JSON.stringify({ ...base, choices: [], usage: usage(body, completion, b) }));
      write("[DONE]");
      rec.completed = true;
      res.end();
      return;
    }
    for (let i = 0; i < n; i++) {
      if (i > 0 && !(await sleep(b.delayBetweenChunksMs))) return;
      const word = REPLY_WORDS[i % REPLY_WORDS.length];
      if (i === (b.eventBytesAt ?? 0) && b.eventBytes) {
        // one event of ~eventBytes: its `data:` line is written in 1 MiB pieces, the newline last
        const text = chunk([{ index: 0, delta: i === 0 ? { role: "assistant", content: word } : { content: word }, logprobs: null, finish_reason: null }], i + 1);
        const cut = text.indexOf(word) + word.length;
        const block = "x".repeat(1024 * 1024);
        if (!(await writeAll(res, `data: ${text.slice(0, cut)}`))) return;
        for (let sent = 0; sent < b.eventBytes; sent += block.length) if (!(await writeAll(res, block))) return;
        if (!(await writeAll(res, `${text.slice(cut)}\n\n`))) return;
        continue;
      }
      write(chunk([{ index: 0, delta: i === 0 ? { role: "assistant", content: word } : { content: word }, logprobs: null, finish_reason: null }], i + 1));
      if (b.errorEventAfterChunks === i + 1) {
        write(JSON.stringify(errorBody(`fake upstream failed mid-stream${echo}`, "server_error", "stream_failed")));
        rec.completed = true;
        res.end();
        return;
      }
      if (b.garbageAfterChunks === i + 1) write("this is not json");
      if (b.dropAfterChunks === i + 1) {
        // the connection closes mid-body (no chunked terminator: the client's read fails) with a FIN,
        // not a reset: a reset could overtake the chunks before it, and a client that had not read
        // them yet lost them (a busy CI run saw no first byte, so the gateway rightly retried).
        // The wait lets node:http hand the chunks written through `res` to the socket before it ends.
        await Bun.sleep(20);
        rec.dropped = true; // the close that follows (the FIN's reply may come after a reset()) is not the client's
        res.socket?.end() ?? res.destroy();
        return;
      }
      if (b.truncateAfterChunks === i + 1) { rec.completed = true; res.end(); return; }
    }
    if (!(await sleep(b.delayBetweenChunksMs))) return;
    write(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: n === max ? "length" : "stop" }], n));
    if (includeUsage) write(JSON.stringify({ ...base, choices: [], usage: usage(body, n, b) }));
    write("[DONE]");
    rec.completed = true;
    res.end();
  }

  function embeddings(body: any, b: FakeBehaviour) {
    const inputs: unknown[] = Array.isArray(body?.input) && !body.input.every((x: unknown) => typeof x === "number") ? body.input : [body?.input];
    const dims = Number(body?.dimensions ?? opts.dimensions ?? 8);
    let tokens = 0;
    const data = inputs.map((input, index) => {
      const text = typeof input === "string" ? input : JSON.stringify(input);
      tokens += typeof input === "string" ? encoder.encode(input).length : Array.isArray(input) ? input.length : 0;
      const vec = fakeEmbedding(`${body?.model}\u0000${text}`, dims);
      const embedding = body?.encoding_format === "base64" ? Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength).toString("base64") : Array.from(vec);
      return { object: "embedding", index, embedding };
    });
    return { object: "list", data, model: body?.model, ...(b.omitUsage ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }) };
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/v1`,
    origin,
    port,
    requests,
    aborts,
    get inFlight() {
      return load.inFlight;
    },
    get peakInFlight() {
      return load.peakInFlight;
    },
    behave(b, o) {
      if (o?.model !== undefined) perModel.set(o.model, b);
      else defaultBehaviour = b;
    },
    script(fn) {
      scripted = fn;
    },
    reset() {
      requests.length = 0;
      aborts.length = 0;
      load.peakInFlight = load.inFlight;
      defaultBehaviour = {};
      perModel = new Map();
      scripted = null;
    },
    waitForAbort(requestId, timeoutMs = 2000) {
      const find = () => aborts.find((a) => requestId === undefined || a.requestId === requestId);
      const found = find();
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const check = () => {
          const a = find();
          if (!a) return;
          cleanup();
          resolve(a);
        };
        const timer = setTimeout(() => { cleanup(); reject(new Error(`no abort seen within ${timeoutMs} ms`)); }, timeoutMs);
        const cleanup = () => { clearTimeout(timer); abortWaiters.delete(check); };
        abortWaiters.add(check);
      });
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Deterministic unit vector: xorshift32 seeded with FNV-1a of `key`. */
export function fakeEmbedding(key: string, dims: number): Float32Array {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) { h ^= key.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
  let x = h || 1;
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    v[i] = x / 0xffffffff * 2 - 1;
    norm += v[i]! * v[i]!;
  }
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < dims; i++) v[i] = v[i]! / norm;
  return v;
}

function errorBody(message: string, type: string, code: string | null = null, param: string | null = null) {
  return { error: { message, type, param, code } };
}

/** write, waiting for the socket to drain; false once the client has gone */
async function writeAll(res: ServerResponse, text: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(text)) await new Promise<void>((r) => { res.once("drain", r); res.once("close", r); });
  return !res.destroyed;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}
