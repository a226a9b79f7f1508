/**
 * A fake Anthropic API: a real HTTP server on a loopback port speaking the Messages API wire
 * protocol, for tests of the anthropic plugin and of clients going through reelay to it.
 *
 *   const fake = await startFakeAnthropic();
 *   fake.url            // "http://127.0.0.1:<port>": the Anthropic SDK's baseURL, the plugin's baseUrl
 *   fake.apiKey         // the x-api-key it accepts (opts.apiKey, default FAKE_ANTHROPIC_KEY)
 *   fake.requests       // RecordedRequest[]: method, path, query, headers, parsed body, aborted, completed
 *   fake.aborts         // { requestId, at } for every request the client abandoned before the end
 *   fake.behave(b)      // replace the default behaviour (FakeAnthropicBehaviour); { model } for one model only
 *   fake.reset(), await fake.waitForAbort(id?, ms?), await fake.stop()
 *
 * node:http rather than Bun.serve: Bun.serve sends the headers only with the first body byte, and
 * "headers at once, the first event late" (a slow first token) must be distinguishable from a slow
 * connect, as the plugin's connect / first-byte deadlines are.
 *
 * Endpoints: POST /v1/messages (JSON, or server-sent events with `stream: true`),
 * POST /v1/messages/count_tokens; a query string (`?beta=true`) is accepted. Every request needs
 * the key, as `x-api-key` or `Authorization: Bearer` (the Anthropic SDK 1.x sends the latter; 401
 * authentication_error otherwise), and `anthropic-version` (400). Errors use
 * Anthropic's envelope `{"type":"error","error":{"type","message"},"request_id"}` and statuses (400
 * invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error, 413
 * request_too_large, 429 rate_limit_error, 500 api_error, 529 overloaded_error), with a
 * `request-id` header. Bodies are validated as the real API does where a translator can get it
 * wrong: max_tokens required, messages non-empty and starting with a user turn, no empty text
 * blocks, every tool_use answered by a tool_result in the next message and every tool_result
 * answering one, a thinking budget of ≥ 1024 and below max_tokens; `system` turns in `messages`
 * only with the `mid-conversation-system-…` beta (Claude Code sends them).
 *
 * The answer. Text: `text` if set, else N = min(max_tokens, tokens ?? 16) words of REPLY_WORDS
 * (each one cl100k token); cut at max_tokens (stop_reason "max_tokens") and before the first of
 * `stop_sequences` it contains ("stop_sequence"), else "end_turn". `thinking` puts a thinking block
 * first, with `signature` (default "sig-" + a hash of the thinking); `redactedThinking` a
 * redacted_thinking block. `toolUse` answers a request that offers tools, and whose last message is
 * not a tool_result, with tool_use blocks (after the text when `text` is set; stop_reason
 * "tool_use"). `stopReason` overrides the stop reason (e.g. "refusal").
 *
 * Usage. input_tokens follows fakeInputTokens(body) (cl100k tokens of every text, 3 per message,
 * 85 per image or document, the tools' JSON), less the behaviour's `cacheRead` and `cacheWrite`,
 * which are reported as cache_read_input_tokens and cache_creation_input_tokens (as given: a
 * hostile report may exceed the prompt). output_tokens: cl100k tokens of the text, thinking and
 * tool inputs (JSON) sent. count_tokens answers fakeInputTokens(body).
 *
 * Streams follow Anthropic's grammar: message_start (output_tokens 1), a ping, per block
 * content_block_start / content_block_delta (text_delta one token each; thinking_delta then a
 * signature_delta; input_json_delta "" then the input JSON in three pieces) / content_block_stop,
 * message_delta (stop reason, cumulative usage), message_stop.
 *
 * Failure modes: `status` (+ `errorMessage`, `retryAfter` seconds); `errorEventAfterDeltas: n` (a
 * mid-stream `error` event of `errorEventType`, default overloaded_error, after n deltas; 0: right
 * after message_start); `resetAfterDeltas: n` (the connection reset mid-stream); `resetBeforeAnswer`
 * (reset before any byte); `delayHeadersMs`, `delayFirstByteMs` (headers at once, the first event
 * late), `delayBetweenEventsMs`; `hang`; `garbageBody` (200 with that text).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { REPLY_WORDS, replyText } from "./openai-upstream.ts";

export const FAKE_ANTHROPIC_KEY = "sk-ant-fake-0123456789abcdef";

export interface FakeAnthropicBehaviour {
  /** cap on the counted words (N = min(max_tokens, tokens ?? 16)) when no `text` is set */
  tokens?: number;
  /** this text as the answer (cut at max_tokens and at a stop sequence) */
  text?: string;
  /** a thinking block first, with this text */
  thinking?: string;
  /** its signature (default "sig-" + a hash of the thinking) */
  signature?: string;
  /** a redacted_thinking block with this data, before the text */
  redactedThinking?: string;
  /** answer a request that offers tools (unless its last message is a tool_result) with these tool_use blocks */
  toolUse?: Array<{ name: string; input: unknown; id?: string }>;
  /** override the stop reason ("refusal", "pause_turn" …) */
  stopReason?: string;
  /** of the prompt: reported as cache_read_input_tokens */
  cacheRead?: number;
  /** of the prompt: reported as cache_creation_input_tokens */
  cacheWrite?: number;
  /** answer with this HTTP status and Anthropic's error body */
  status?: number;
  errorMessage?: string;
  /** with `status`: a retry-after header (seconds) */
  retryAfter?: number;
  /** streaming: an `error` event after this many content deltas (0: right after message_start), then the end */
  errorEventAfterDeltas?: number;
  /** its error type, default overloaded_error */
  errorEventType?: string;
  /** streaming: reset the connection after this many content deltas */
  resetAfterDeltas?: number;
  /**
   * with resetAfterDeltas: reset once this settles (the test saw the deltas arrive; at most 5 s)
   * instead of 20 ms after writing them: an RST drops what the client had not read yet, and under
   * load 20 ms was not always enough (the reset came first and the client saw no output at all)
   */
  resetWhen?: Promise<unknown>;
  /** reset the connection before answering anything */
  resetBeforeAnswer?: boolean;
  /** wait before the response headers */
  delayHeadersMs?: number;
  /** streaming: the headers at once, the first event after this long */
  delayFirstByteMs?: number;
  /** streaming: between events */
  delayBetweenEventsMs?: number;
  /** never answer */
  hang?: boolean;
  /** answer 200 with this text instead of the protocol */
  garbageBody?: string;
}

export interface RecordedRequest {
  id: number;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: any;
  receivedAt: number;
  aborted: boolean;
  abortedAt?: number;
  completed: boolean;
}

export interface FakeAnthropic {
  url: string;
  port: number;
  apiKey: string;
  requests: RecordedRequest[];
  aborts: Array<{ requestId: number; at: number }>;
  behave(b: FakeAnthropicBehaviour, opts?: { model?: string }): void;
  reset(): void;
  waitForAbort(requestId?: number, timeoutMs?: number): Promise<{ requestId: number; at: number }>;
  stop(): Promise<void>;
}

const encoder = new Tiktoken(cl100k_base);
const tokens = (text: string) => encoder.encode(text).length;
/** what one image or document costs in the fake's count */
export const FAKE_MEDIA_TOKENS = 85;

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
  413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
};

/** Every prompt token of a Messages request, as the fake counts it (cache reads and writes included). */
export function fakeInputTokens(body: any): number {
  let n = 0;
  const content = (c: unknown): number => {
    if (typeof c === "string") return tokens(c);
    if (!Array.isArray(c)) return 0;
    let m = 0;
    for (const b of c) {
      if (b?.type === "text") m += tokens(String(b.text ?? ""));
      else if (b?.type === "image" || b?.type === "document") m += FAKE_MEDIA_TOKENS;
      else if (b?.type === "tool_use") m += tokens(String(b.name ?? "") + JSON.stringify(b.input ?? {}));
      else if (b?.type === "tool_result") m += content(b.content);
      else if (b?.type === "thinking") m += tokens(String(b.thinking ?? ""));
    }
    return m;
  };
  n += content(body?.system);
  for (const m of Array.isArray(body?.messages) ? body.messages : []) n += 3 + content(m?.content);
  if (Array.isArray(body?.tools) && body.tools.length) n += tokens(JSON.stringify(body.tools));
  return n;
}

export async function startFakeAnthropic(opts: { port?: number; apiKey?: string; behaviour?: FakeAnthropicBehaviour } = {}): Promise<FakeAnthropic> {
  const apiKey = opts.apiKey ?? FAKE_ANTHROPIC_KEY;
  const requests: RecordedRequest[] = [];
  const aborts: Array<{ requestId: number; at: number }> = [];
  const abortWaiters = new Set<() => void>();
  let defaultBehaviour: FakeAnthropicBehaviour = opts.behaviour ?? {};
  let perModel = new Map<string, FakeAnthropicBehaviour>();
  let nextId = 1;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
    const rec: RecordedRequest = { id: nextId++, method: req.method ?? "GET", path: url.pathname, query: url.search, headers, body: undefined, receivedAt: performance.now(), aborted: false, completed: false };
    requests.push(rec);
    res.on("close", () => {
      if (res.writableFinished || rec.aborted) return;
      rec.aborted = true;
      rec.abortedAt = performance.now();
      aborts.push({ requestId: rec.id, at: rec.abortedAt });
      for (const w of abortWaiters) w();
    });
    const raw = await readBody(req);
    let badJson = false;
    try { rec.body = raw ? JSON.parse(raw) : undefined; } catch { badJson = true; }
    const body = rec.body;
    const b: FakeAnthropicBehaviour = { ...defaultBehaviour, ...(typeof body?.model === "string" ? perModel.get(body.model) : undefined) };
    const requestId = `req_fake${String(rec.id).padStart(6, "0")}`;
    const fail = (status: number, message: string, type = ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")) => {
      if (res.destroyed) return;
      rec.completed = true;
      const extra: Record<string, string> = b.retryAfter !== undefined ? { "retry-after": String(b.retryAfter) } : {};
      res.writeHead(status, { "content-type": "application/json", "request-id": requestId, ...extra }).end(JSON.stringify({ type: "error", error: { type, message }, request_id: requestId }));
    };

    if (b.resetBeforeAnswer) return void (req.socket.resetAndDestroy?.() ?? req.socket.destroy());
    if (b.hang) return;
    if (b.delayHeadersMs) await Bun.sleep(b.delayHeadersMs);
    // the key as x-api-key (Claude Code, the classic header) or as a bearer token (the Anthropic SDK since 1.x)
    const given = headers["x-api-key"] ?? headers["authorization"]?.replace(/^Bearer /i, "");
    if (given !== apiKey) return fail(401, given ? "invalid x-api-key" : "x-api-key header is required");
    if (!headers["anthropic-version"]) return fail(400, "anthropic-version: header is required");
    if (b.garbageBody !== undefined) {
      rec.completed = true;
      return void res.writeHead(200, { "content-type": "text/html" }).end(b.garbageBody);
    }
    if (b.status && b.status >= 400) return fail(b.status, b.errorMessage ?? (b.status === 529 ? "Overloaded" : `fake upstream error ${b.status}`));
    if (req.method !== "POST" || (url.pathname !== "/v1/messages" && url.pathname !== "/v1/messages/count_tokens")) return fail(404, `Not found: ${req.method} ${url.pathname}`);
    if (badJson) return fail(400, "There was an issue with your request body: it is not valid JSON");
    const counting = url.pathname === "/v1/messages/count_tokens";
    const problem = invalid(body, counting, (headers["anthropic-beta"] ?? "").split(",").map((b) => b.trim()));
    if (problem) return fail(400, problem);
    if (counting) {
      rec.completed = true;
      return void res.writeHead(200, { "content-type": "application/json", "request-id": requestId }).end(JSON.stringify({ input_tokens: fakeInputTokens(body) }));
    }
    const answer = compose(body, b, rec.id);
    if (body.stream === true) return stream(rec, res, answer, b, requestId);
    rec.completed = true;
    res.writeHead(200, { "content-type": "application/json", "request-id": requestId }).end(JSON.stringify(answer.message));
  });
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 1000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    apiKey,
    requests,
    aborts,
    behave(b, o) {
      if (o?.model !== undefined) perModel.set(o.model, b);
      else defaultBehaviour = b;
    },
    reset() {
      requests.length = 0;
      aborts.length = 0;
      defaultBehaviour = {};
      perModel = new Map();
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

/** What the real API refuses with 400 where a translator could go wrong; null when the body is fine. */
function invalid(body: any, counting: boolean, betas: string[]): string | null {
  if (typeof body !== "object" || body === null) return "body: Input should be an object";
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  if (!counting && (!Number.isInteger(body.max_tokens) || body.max_tokens < 1)) return "max_tokens: Field required (an integer ≥ 1)";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: at least one message is required";
  if (body.system !== undefined && typeof body.system !== "string" && !Array.isArray(body.system)) return "system: Input should be a valid string or a list of text blocks";
  const t = body.thinking;
  if (t?.type === "enabled") {
    if (!Number.isInteger(t.budget_tokens) || t.budget_tokens < 1024) return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
    if (!counting && t.budget_tokens >= body.max_tokens) return "`max_tokens` must be greater than `thinking.budget_tokens`";
  }
  if (body.messages[0]?.role !== "user") return "messages: first message must use the \"user\" role";
  let pending: string[] = [];
  // Claude Code's beta: `system` turns in the conversation (they answer no tool_use and need no answer)
  const systemTurns = betas.some((b) => b.startsWith("mid-conversation-system-"));
  for (const [i, m] of body.messages.entries()) {
    if (m?.role === "system" && systemTurns && (typeof m.content === "string" || Array.isArray(m.content))) continue;
    if (m?.role !== "user" && m?.role !== "assistant") return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : Array.isArray(m.content) ? m.content : null;
    if (!blocks) return `messages.${i}.content: Input should be a valid string or a list of content blocks`;
    for (const [j, b] of blocks.entries()) if (b?.type === "text" && (typeof b.text !== "string" || b.text === "")) return `messages.${i}.content.${j}.text: text content blocks must be non-empty`;
    const results = blocks.filter((b: any) => b?.type === "tool_result").map((b: any) => b.tool_use_id);
    for (const id of results) if (!pending.includes(id)) return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    const unanswered = pending.filter((id) => !results.includes(id));
    if (unanswered.length) return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    pending = m.role === "assistant" ? blocks.filter((b: any) => b?.type === "tool_use").map((b: any) => b.id) : [];
  }
  if (pending.length && !counting) return `messages: the last message has \`tool_use\` ids without \`tool_result\` blocks: ${pending.join(", ")}`;
  return null;
}

interface Answer {
  message: any;
  /** the content blocks as they are streamed */
  blocks: Array<{ start: any; deltas: any[] }>;
}

function compose(body: any, b: FakeAnthropicBehaviour, n: number): Answer {
  const max = body.max_tokens as number;
  const content: any[] = [];
  const blocks: Answer["blocks"] = [];
  let output = 0;
  if (b.thinking !== undefined) {
    const signature = b.signature ?? `sig-${Bun.hash(b.thinking).toString(36)}`;
    content.push({ type: "thinking", thinking: b.thinking, signature });
    const pieces = encoder.encode(b.thinking).map((t) => encoder.decode([t]));
    blocks.push({ start: { type: "thinking", thinking: "", signature: "" }, deltas: [...pieces.map((p) => ({ type: "thinking_delta", thinking: p })), { type: "signature_delta", signature }] });
    output += pieces.length;
  }
  if (b.redactedThinking !== undefined) {
    content.push({ type: "redacted_thinking", data: b.redactedThinking });
    blocks.push({ start: { type: "redacted_thinking", data: b.redactedThinking }, deltas: [] });
  }
  const offered = Array.isArray(body.tools) && body.tools.length > 0;
  const last = body.messages.at(-1);
  const afterResult = Array.isArray(last?.content) && last.content.some((c: any) => c?.type === "tool_result");
  const calls = b.toolUse?.length && offered && !afterResult ? b.toolUse : null;
  let stop = "end_turn";
  let stopSequence: string | null = null;
  if (!calls || b.text !== undefined) {
    let text = b.text ?? replyText(Math.min(max, b.tokens ?? 16));
    for (const s of Array.isArray(body.stop_sequences) ? body.stop_sequences : []) {
      const at = text.indexOf(s);
      if (at >= 0 && (stopSequence === null || at < text.indexOf(stopSequence))) stopSequence = s;
    }
    if (stopSequence !== null) {
      text = text.slice(0, text.indexOf(stopSequence));
      stop = "stop_sequence";
    }
    let pieces = encoder.encode(text).map((t) => encoder.decode([t]));
    if (output + pieces.length >= max) {
      pieces = pieces.slice(0, Math.max(0, max - output));
      stop = "max_tokens";
      stopSequence = null;
    }
    output += pieces.length;
    if (pieces.length) {
      content.push({ type: "text", text: pieces.join("") });
      blocks.push({ start: { type: "text", text: "" }, deltas: pieces.map((p) => ({ type: "text_delta", text: p })) });
    }
  }
  if (calls && stop !== "max_tokens") {
    for (const [i, c] of calls.entries()) {
      const id = c.id ?? `toolu_fake${n}_${i}`;
      const json = JSON.stringify(c.input);
      const third = Math.ceil(json.length / 3) || 1;
      content.push({ type: "tool_use", id, name: c.name, input: c.input });
      blocks.push({ start: { type: "tool_use", id, name: c.name, input: {} }, deltas: ["", json.slice(0, third), json.slice(third, 2 * third), json.slice(2 * third)].filter((p, k) => k === 0 || p !== "").map((p) => ({ type: "input_json_delta", partial_json: p })) });
      output += tokens(c.name + json);
    }
    stop = "tool_use";
  }
  const prompt = fakeInputTokens(body);
  const read = b.cacheRead ?? 0;
  const write = b.cacheWrite ?? 0;
  const usage = { input_tokens: prompt - read - write, cache_creation_input_tokens: write, cache_read_input_tokens: read, output_tokens: output, service_tier: "standard" };
  const message = {
    id: `msg_fake${String(n).padStart(6, "0")}`, type: "message", role: "assistant", model: body.model, content,
    stop_reason: b.stopReason ?? stop, stop_sequence: stopSequence, usage,
  };
  return { message, blocks };
}

async function stream(rec: RecordedRequest, res: ServerResponse, answer: Answer, b: FakeAnthropicBehaviour, requestId: string): Promise<void> {
  const write = (event: string, data: unknown) => {
    if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const pause = async (ms?: number) => {
    if (ms) await Bun.sleep(ms);
    return !res.destroyed;
  };
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "request-id": requestId });
  res.flushHeaders();
  if (!(await pause(b.delayFirstByteMs))) return;
  const m = answer.message;
  write("message_start", { type: "message_start", message: { ...m, content: [], stop_reason: null, stop_sequence: null, usage: { ...m.usage, output_tokens: 1 } } });
  write("ping", { type: "ping" });
  let deltas = 0;
  const broke = async (): Promise<boolean> => {
    if (b.errorEventAfterDeltas === deltas) {
      write("error", { type: "error", error: { type: b.errorEventType ?? "overloaded_error", message: b.errorEventType === undefined || b.errorEventType === "overloaded_error" ? "Overloaded" : "fake mid-stream error" }, request_id: requestId });
      rec.completed = true;
      res.end();
      return true;
    }
    if (b.resetAfterDeltas === deltas) {
      // let what was written reach the client first
      await (b.resetWhen ? Promise.race([b.resetWhen, Bun.sleep(5_000)]) : Bun.sleep(20));
      res.socket?.resetAndDestroy?.() ?? res.destroy();
      return true;
    }
    return false;
  };
  if (await broke()) return;
  for (const [index, block] of answer.blocks.entries()) {
    if (!(await pause(b.delayBetweenEventsMs))) return;
    write("content_block_start", { type: "content_block_start", index, content_block: block.start });
    for (const delta of block.deltas) {
      if (!(await pause(b.delayBetweenEventsMs))) return;
      write("content_block_delta", { type: "content_block_delta", index, delta });
      deltas++;
      if (await broke()) return;
    }
    write("content_block_stop", { type: "content_block_stop", index });
  }
  if (!(await pause(b.delayBetweenEventsMs))) return;
  const { output_tokens, input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = m.usage;
  write("message_delta", { type: "message_delta", delta: { stop_reason: m.stop_reason, stop_sequence: m.stop_sequence }, usage: { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } });
  write("message_stop", { type: "message_stop" });
  rec.completed = true;
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

export { REPLY_WORDS, replyText };
