/**
 * A fake Gemini API (generativelanguage.googleapis.com): a real HTTP server on a loopback port
 * speaking its REST wire protocol, for the gemini plugin and clients going through reelay to it.
 *
 *   const fake = await startFakeGemini();
 *   fake.url            // "http://127.0.0.1:<port>": the plugin's baseUrl (it adds /v1beta/models/…)
 *   fake.apiKey         // the x-goog-api-key it accepts
 *   fake.requests       // method, path, query, headers, parsed body, aborted, completed
 *   fake.aborts, fake.behave(b), fake.reset(), await fake.stop()
 *
 * Endpoints (https://ai.google.dev/api): POST /v1beta/models/{model}:generateContent,
 * :streamGenerateContent?alt=sse (server-sent GenerateContentResponse chunks, no end marker: the
 * stream ends with the body), :embedContent, :batchEmbedContents (at most 100 requests). The key
 * goes in `x-goog-api-key` (or `?key=`); a wrong one is Google's 400 INVALID_ARGUMENT "API key not
 * valid", none is 403 PERMISSION_DENIED. Errors are Google's `{error: {code, message, status,
 * details}}`; a 429 is RESOURCE_EXHAUSTED with a `google.rpc.RetryInfo` retryDelay. Bodies are
 * parsed as the real API parses them — protobuf JSON: a field it does not define is a 400
 * "Invalid JSON payload received. Unknown name …" — and checked where a translator can go wrong:
 * roles user / model only, no empty parts, every function response answering a function call of
 * the model turn just before it (and all of them answered), images as inlineData with a mime type.
 *
 * The answer: `text` (default N = min(maxOutputTokens, tokens ?? 16) words of REPLY_WORDS, one
 * cl100k token each), cut at maxOutputTokens (MAX_TOKENS; the thought counts against it, as
 * Gemini 2.5 counts thinking) and before the first stop sequence; `thought` first as a
 * `thought: true` part when the request asks for includeThoughts;
 * `functionCalls` answers a request offering function declarations (unless its last turn is a
 * function response) with functionCall parts, a `thoughtSignature` on the first. Usage
 * (usageMetadata): promptTokenCount = cl100k tokens of every text (+ 258 per image, Gemini's
 * figure for a small image), cachedContentTokenCount = `cachedTokens` (part of the prompt),
 * candidatesTokenCount = tokens of the answer, thoughtsTokenCount = tokens of the thought.
 * `blockPrompt` answers promptFeedback.blockReason SAFETY with no candidates; `finishReason`
 * overrides the candidate's (SAFETY, RECITATION …).
 *
 * Failure modes: `status` (Google's error for it; 429 with `retryDelay` seconds), `hang`,
 * `garbageBody`, `resetAfterChunks`, `delayBetweenChunksMs`, `errorChunkAfter` (an error object
 * as a stream event).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { fakeEmbedding, REPLY_WORDS } from "./openai-upstream.ts";

export const FAKE_GEMINI_KEY = "AIza-fake-gemini-0123456789";
const encoder = new Tiktoken(cl100k_base);

export interface FakeGeminiBehaviour {
  tokens?: number;
  text?: string;
  thought?: string;
  functionCalls?: Array<{ name: string; args: Record<string, unknown> }>;
  cachedTokens?: number;
  blockPrompt?: boolean;
  finishReason?: string;
  status?: number;
  errorMessage?: string;
  /** 429: the RetryInfo delay, seconds */
  retryDelay?: number;
  hang?: boolean;
  garbageBody?: string;
  resetAfterChunks?: number;
  delayBetweenChunksMs?: number;
  errorChunkAfter?: number;
}

export interface GeminiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: any;
  aborted: boolean;
  completed: boolean;
}

export interface FakeGemini {
  url: string;
  port: number;
  apiKey: string;
  requests: GeminiRequest[];
  aborts: number;
  behave(b: FakeGeminiBehaviour): void;
  reset(): void;
  stop(): Promise<void>;
}

const STATUS: Record<number, string> = { 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED" };

// the fields each message of the API defines (https://ai.google.dev/api/generate-content)
const REQUEST_FIELDS = ["contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings", "cachedContent", "model"];
const GENERATION_FIELDS = ["stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty", "frequencyPenalty", "responseLogprobs", "logprobs", "thinkingConfig", "responseModalities"];
const PART_FIELDS = ["text", "inlineData", "fileData", "functionCall", "functionResponse", "thought", "thoughtSignature"];

class Refusal extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}
const unknownName = (field: string, at: string) => new Refusal(400, `Invalid JSON payload received. Unknown name "${field}" at '${at}': Cannot find field.`);

export async function startFakeGemini(opts: { port?: number; apiKey?: string; behaviour?: FakeGeminiBehaviour } = {}): Promise<FakeGemini> {
  const apiKey = opts.apiKey ?? FAKE_GEMINI_KEY;
  const requests: GeminiRequest[] = [];
  let behaviour: FakeGeminiBehaviour = opts.behaviour ?? {};
  let aborts = 0;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
    const rec: GeminiRequest = { method: req.method ?? "GET", path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body: undefined, aborted: false, completed: false };
    requests.push(rec);
    res.on("close", () => {
      if (!res.writableFinished && !rec.aborted) {
        rec.aborted = true;
        aborts++;
      }
    });
    const raw = await readBody(req);
    const send = (status: number, json: unknown) => {
      rec.completed = true;
      res.writeHead(status, { "content-type": "application/json; charset=UTF-8" }).end(JSON.stringify(json));
    };
    const error = (status: number, message: string, details: unknown[] = []) => send(status, { error: { code: status, message, status: STATUS[status] ?? "UNKNOWN", ...(details.length ? { details } : {}) } });
    try {
      rec.body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return error(400, `Invalid JSON payload received. Unexpected token.`);
    }
    const b = behaviour;
    const key = headers["x-goog-api-key"] ?? url.searchParams.get("key");
    if (!key) return error(403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
    if (key !== apiKey) return error(400, "API key not valid. Please pass a valid API key.", [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }]);
    const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(url.pathname);
    if (!m || req.method !== "POST") return error(404, `Method not found: ${req.method} ${url.pathname}`);
    const [, model, method] = m as unknown as [string, string, string];
    if (b.hang) return;
    if (b.garbageBody !== undefined) {
      rec.completed = true;
      return void res.writeHead(200, { "content-type": "text/html" }).end(b.garbageBody);
    }
    if (b.status && b.status >= 400) {
      const details = b.status === 429 && b.retryDelay !== undefined ? [{ "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_requests", quotaId: "GenerateRequestsPerMinutePerProjectPerModel" }] }, { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${b.retryDelay}s` }] : [];
      return error(b.status, b.errorMessage ?? (b.status === 429 ? "You exceeded your current quota, please check your plan and billing details." : b.status === 503 ? "The model is overloaded. Please try again later." : `fake Gemini error ${b.status}`), details);
    }
    try {
      if (method === "embedContent") return send(200, { embedding: embed(model, rec.body) });
      if (method === "batchEmbedContents") {
        const list = rec.body?.requests;
        if (!Array.isArray(list) || list.length === 0) throw new Refusal(400, "* BatchEmbedContentsRequest.requests: must not be empty");
        if (list.length > 100) throw new Refusal(400, "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch");
        for (const r of list) if (r?.model !== `models/${model}`) throw new Refusal(400, `* BatchEmbedContentsRequest.requests[].model: model names must match the request's (models/${model})`);
        return send(200, { embeddings: list.map((r: any) => embed(model, r)) });
      }
      const body = checkGenerate(rec.body);
      const answer = answerOf(body, b);
      if (method === "generateContent") return send(200, { candidates: answer.candidates, ...(answer.promptFeedback ? { promptFeedback: answer.promptFeedback } : {}), usageMetadata: answer.usage, modelVersion: model, responseId: "fake-response" });
      if (url.searchParams.get("alt") !== "sse") throw new Refusal(400, "this fake streams only with alt=sse");
      await stream(rec, res, model, answer, b);
    } catch (err) {
      if (err instanceof Refusal) return error(err.status, err.message);
      throw err;
    }
  });
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    apiKey,
    requests,
    get aborts() { return aborts; },
    behave(b) { behaviour = b; },
    reset() { requests.length = 0; behaviour = {}; aborts = 0; },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The request as the API parses it: unknown fields refused, turns and parts checked. */
function checkGenerate(body: any) {
  if (!body || typeof body !== "object") throw new Refusal(400, "Invalid JSON payload received.");
  for (const k of Object.keys(body)) if (!REQUEST_FIELDS.includes(k)) throw unknownName(k, "");
  for (const k of Object.keys(body.generationConfig ?? {})) if (!GENERATION_FIELDS.includes(k)) throw unknownName(k, "generation_config");
  if (!Array.isArray(body.contents) || body.contents.length === 0) throw new Refusal(400, "* GenerateContentRequest.contents: contents is not specified");
  let previous: any = null;
  for (const [i, c] of body.contents.entries()) {
    if (c.role !== "user" && c.role !== "model") throw new Refusal(400, `Please use a valid role: user, model. (contents[${i}].role: ${c.role})`);
    if (!Array.isArray(c.parts) || c.parts.length === 0) throw new Refusal(400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`);
    for (const p of c.parts) {
      for (const k of Object.keys(p)) if (!PART_FIELDS.includes(k)) throw unknownName(k, `contents[${i}].parts[0]`);
      if (p.text === "") throw new Refusal(400, `* GenerateContentRequest.contents[${i}].parts: text must not be empty`);
      if (p.inlineData && (typeof p.inlineData.mimeType !== "string" || typeof p.inlineData.data !== "string")) throw new Refusal(400, `* contents[${i}]: inline_data needs mime_type and data`);
    }
    const responses = c.parts.filter((p: any) => p.functionResponse);
    if (responses.length) {
      const calls = (previous?.role === "model" ? previous.parts : []).filter((p: any) => p.functionCall).map((p: any) => p.functionCall.name);
      const answered = responses.map((p: any) => p.functionResponse.name);
      if (calls.length === 0 || answered.length !== calls.length || answered.some((n: string) => !calls.includes(n))) {
        throw new Refusal(400, "Please ensure that function response turn comes immediately after a function call turn. And the number of function response parts should be equal to number of function call parts of the function call turn.");
      }
      for (const p of responses) if (typeof p.functionResponse.response !== "object" || p.functionResponse.response === null) throw new Refusal(400, "function_response.response must be an object");
    }
    previous = c;
  }
  for (const t of body.tools ?? []) for (const f of t.functionDeclarations ?? []) if (typeof f.name !== "string" || !/^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/.test(f.name)) throw new Refusal(400, `* GenerateContentRequest.tools[0].function_declarations: invalid name ${f.name}`);
  return body;
}

function promptTokens(body: any): number {
  let n = 0;
  const count = (parts: any[]) => {
    for (const p of parts ?? []) {
      if (typeof p.text === "string") n += encoder.encode(p.text).length;
      if (p.inlineData) n += 258;
      if (p.functionCall) n += encoder.encode(p.functionCall.name + JSON.stringify(p.functionCall.args ?? {})).length;
      if (p.functionResponse) n += encoder.encode(JSON.stringify(p.functionResponse.response)).length;
    }
  };
  count(body.systemInstruction?.parts);
  for (const c of body.contents) count(c.parts);
  return n;
}

interface Answer {
  candidates: any[];
  promptFeedback?: unknown;
  usage: Record<string, number | undefined>;
  /** the parts, one per stream chunk */
  pieces: any[];
  finishReason: string;
}

function answerOf(body: any, b: FakeGeminiBehaviour): Answer {
  const prompt = promptTokens(body);
  const cached = b.cachedTokens ? { cachedContentTokenCount: b.cachedTokens } : {};
  if (b.blockPrompt) return { candidates: [], promptFeedback: { blockReason: "SAFETY", safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH" }] }, usage: { promptTokenCount: prompt, totalTokenCount: prompt, ...cached }, pieces: [], finishReason: "" };
  const g = body.generationConfig ?? {};
  const max = g.maxOutputTokens ?? Infinity;
  const pieces: any[] = [];
  let thoughts = 0;
  if (b.thought && g.thinkingConfig?.includeThoughts === true && g.thinkingConfig?.thinkingBudget !== 0) {
    for (const t of encoder.encode(b.thought)) pieces.push({ text: encoder.decode([t]), thought: true });
    thoughts = pieces.length;
  }
  const offered = (body.tools ?? []).some((t: any) => t.functionDeclarations?.length);
  const lastTurn = body.contents.at(-1);
  const answered = lastTurn?.parts?.some((p: any) => p.functionResponse);
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  let finishReason = "STOP";
  let output = 0;
  if (b.functionCalls?.length && offered && !answered && mode !== "NONE") {
    for (const [i, c] of b.functionCalls.entries()) {
      pieces.push({ functionCall: { name: c.name, args: c.args }, ...(i === 0 ? { thoughtSignature: `sig-${c.name}` } : {}) });
      output += encoder.encode(c.name + JSON.stringify(c.args)).length;
    }
  } else {
    let text = b.text ?? Array.from({ length: Math.min(b.tokens ?? 16, 64) }, (_, i) => REPLY_WORDS[i % REPLY_WORDS.length]).join("");
    for (const s of g.stopSequences ?? []) if (text.includes(s)) text = text.slice(0, text.indexOf(s));
    const tokens = encoder.encode(text);
    // thinking counts against maxOutputTokens (Gemini 2.5): what is left is the answer's
    const room = Math.max(0, max - thoughts);
    if (tokens.length > room) finishReason = "MAX_TOKENS";
    for (const t of tokens.slice(0, room)) pieces.push({ text: encoder.decode([t]) });
    output = Math.min(tokens.length, room);
  }
  if (b.finishReason) finishReason = b.finishReason;
  const usage = { promptTokenCount: prompt, candidatesTokenCount: output, totalTokenCount: prompt + output + thoughts, ...(thoughts ? { thoughtsTokenCount: thoughts } : {}), ...cached };
  const merged = mergeText(pieces);
  return { candidates: [{ content: { role: "model", parts: merged }, finishReason, index: 0, safetyRatings: [] }], usage, pieces, finishReason };
}

/** A whole answer's parts: consecutive text of one kind in one part, as the API answers. */
function mergeText(pieces: any[]): any[] {
  const out: any[] = [];
  for (const p of pieces) {
    const last = out.at(-1);
    if (p.text !== undefined && last?.text !== undefined && !!last.thought === !!p.thought) last.text += p.text;
    else out.push({ ...p });
  }
  return out;
}

async function stream(rec: GeminiRequest, res: ServerResponse, model: string, a: Answer, b: FakeGeminiBehaviour): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  const write = (json: unknown) => { if (!res.destroyed) res.write(`data: ${JSON.stringify(json)}\r\n\r\n`); };
  const running = { promptTokenCount: a.usage.promptTokenCount, totalTokenCount: a.usage.promptTokenCount };
  if (a.promptFeedback) {
    write({ promptFeedback: a.promptFeedback, usageMetadata: a.usage, modelVersion: model });
    rec.completed = true;
    return void res.end();
  }
  for (const [i, p] of a.pieces.entries()) {
    if (i > 0 && b.delayBetweenChunksMs) await Bun.sleep(b.delayBetweenChunksMs);
    if (res.destroyed) return;
    const last = i === a.pieces.length - 1;
    write({ candidates: [{ content: { role: "model", parts: [p] }, index: 0, ...(last ? { finishReason: a.finishReason } : {}) }], usageMetadata: last ? a.usage : running, modelVersion: model, responseId: "fake-response" });
    if (b.errorChunkAfter === i + 1) {
      write({ error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } });
      rec.completed = true;
      return void res.end();
    }
    if (b.resetAfterChunks === i + 1) {
      await Bun.sleep(100); // the frames before the reset read by the client first (an RST drops what it had not read)
      return void (res.socket?.resetAndDestroy?.() ?? res.destroy());
    }
  }
  if (a.pieces.length === 0) write({ candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: a.finishReason, index: 0 }], usageMetadata: a.usage, modelVersion: model });
  rec.completed = true;
  res.end();
}

function embed(model: string, r: any): { values: number[] } {
  const parts = r?.content?.parts;
  if (!Array.isArray(parts) || parts.length === 0 || parts.some((p: any) => typeof p.text !== "string")) throw new Refusal(400, "* EmbedContentRequest.content: parts must be text");
  for (const k of Object.keys(r)) if (!["model", "content", "taskType", "title", "outputDimensionality"].includes(k)) throw unknownName(k, "");
  const dims = r.outputDimensionality ?? 8;
  return { values: Array.from(fakeEmbedding(`${model}\u0000${parts.map((p: any) => p.text).join("")}`, dims)) };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}
