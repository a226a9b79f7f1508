/**
 * Fakes of the OpenAI-compatible providers the openai-compatible presets name: a thin HTTP server
 * per provider in front of the shared fake OpenAI upstream (openai-upstream.ts), speaking that
 * provider's wire format and quirks as its documentation describes them (the sources are in
 * plugins/openai-compatible/presets.ts; this table is written from the providers' side, not read
 * from the presets, so a wrong preset fails against it):
 *
 * - its path (Groq's /openai/v1, Fireworks' /inference/v1, Azure's /openai/v1 and
 *   /openai/deployments/<name>/…?api-version=), its auth (Bearer, Azure's `api-key` — an
 *   `Authorization` header is a 401 there, as Azure reads it as an Entra token — or none)
 * - the request fields it refuses, answered with its own error (Groq's 400, Mistral's 422
 *   `extra_forbidden`, Gemini's protobuf "Unknown name"), message fields included
 * - how it streams usage: when asked (`stream_options.include_usage`), always on the last chunk
 *   (Mistral, llama.cpp: and `stream_options` refused by Mistral), or on every chunk (Perplexity)
 * - where reasoning text goes (`reasoning` vs `reasoning_content`) and DeepSeek's
 *   `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`
 * - its error shape and retry header (Azure: `{error: {code: "429", message}}` with
 *   `retry-after-ms`; Google: `{error: {code, message, status}}`), OpenRouter's `: OPENROUTER
 *   PROCESSING` SSE comments
 *
 *   const groq = await startFakeProvider("groq");
 *   groq.url          // what to give as baseUrl (origin + the provider's path)
 *   groq.apiKey       // the key it accepts
 *   groq.requests     // what reached it: method, path, query, headers, body
 *   groq.behave({ status: 429, retryAfter: 2 })   // an error in the provider's shape; else forwarded as FakeBehaviour
 *   groq.inner        // the shared fake behind it (its own requests, as forwarded)
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { startFakeOpenAI, type FakeBehaviour, type FakeOpenAI } from "./openai-upstream.ts";

interface Wire {
  /** the path in front of /chat/completions and /embeddings */
  prefix: string;
  auth: "bearer" | "api-key" | "none";
  /** request fields answered with an error (the provider's shape) */
  refuses?: string[];
  refusesMessageFields?: string[];
  /** asked: OpenAI's include_usage; last-chunk: always, on the finish chunk; every-chunk: running usage on each chunk */
  streamUsage: "asked" | "last-chunk" | "every-chunk";
  /** stream_options is not a field here */
  refusesStreamOptions?: boolean;
  reasoningField: "reasoning_content" | "reasoning";
  /** where prompt-cache hits are reported */
  cache: "openai" | "deepseek";
  /** the error body this provider sends */
  error: (status: number, message: string, field?: string) => unknown;
  retryHeader: "retry-after" | "retry-after-ms";
  /** OpenRouter keeps a slow connection alive with SSE comments */
  sseComments?: boolean;
  /** Azure: deployment URLs (/openai/deployments/<name>/…) that need an api-version */
  deployments?: boolean;
}

const openaiError = (status: number, message: string, field?: string) => ({ error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", param: field ?? null, code: field ? "unsupported_parameter" : null } });
const googleError = (status: number, message: string) => ({ error: { code: status, message, status: status === 429 ? "RESOURCE_EXHAUSTED" : status === 400 ? "INVALID_ARGUMENT" : status === 401 ? "UNAUTHENTICATED" : "INTERNAL" } });
// Mistral's validation errors are FastAPI's (https://docs.mistral.ai/api/): 422 with `detail`
const mistralError = (status: number, message: string, field?: string) =>
  field ? { object: "error", message: { detail: [{ type: "extra_forbidden", loc: ["body", field], msg: "Extra inputs are not permitted" }] }, type: "invalid_request_message_error", param: null, code: null }
    : { object: "error", message, type: status === 429 ? "rate_limited" : "invalid_request_error", param: null, code: String(status) };
const azureError = (status: number, message: string) => ({ error: { code: String(status), message } });

const OPENAI: Wire = { prefix: "/v1", auth: "bearer", streamUsage: "asked", reasoningField: "reasoning_content", cache: "openai", error: openaiError, retryHeader: "retry-after" };
const LOCAL: Wire = { ...OPENAI, auth: "none" };

export const WIRES = {
  openai: OPENAI,
  "azure-openai": { ...OPENAI, prefix: "/openai/v1", auth: "api-key", error: azureError, retryHeader: "retry-after-ms", deployments: true },
  gemini: { ...OPENAI, prefix: "/v1beta/openai", error: googleError, refuses: ["store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"] },
  mistral: { ...OPENAI, streamUsage: "last-chunk", refusesStreamOptions: true, error: mistralError, refuses: ["seed", "max_completion_tokens", "logit_bias", "logprobs", "top_logprobs", "user", "store", "metadata", "service_tier"] },
  groq: { ...OPENAI, prefix: "/openai/v1", reasoningField: "reasoning", refuses: ["logprobs", "logit_bias", "top_logprobs"], refusesMessageFields: ["name"] },
  together: { ...OPENAI, reasoningField: "reasoning" },
  fireworks: { ...OPENAI, prefix: "/inference/v1" },
  deepseek: { ...OPENAI, prefix: "", cache: "deepseek", refusesMessageFields: ["reasoning_content"] },
  xai: { ...OPENAI, refuses: ["presence_penalty", "frequency_penalty", "stop"] },
  openrouter: { ...OPENAI, prefix: "/api/v1", reasoningField: "reasoning", sseComments: true },
  cerebras: { ...OPENAI, refuses: ["frequency_penalty", "presence_penalty", "logit_bias", "parallel_tool_calls", "service_tier"] },
  perplexity: { ...OPENAI, prefix: "", streamUsage: "every-chunk", refuses: ["tools", "tool_choice", "logprobs", "logit_bias"] },
  ollama: { ...LOCAL, reasoningField: "reasoning" },
  vllm: { ...LOCAL, reasoningField: "reasoning" },
  sglang: LOCAL,
  llamacpp: { ...LOCAL, streamUsage: "last-chunk" },
  lmstudio: LOCAL,
  tgi: LOCAL,
} satisfies Record<string, Wire>;

export type ProviderName = keyof typeof WIRES;

export interface WireRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: any;
}

export interface ProviderBehaviour extends FakeBehaviour {
  /** answer this status in the provider's own error shape (with its retry header when retryAfter is set) */
  status?: number;
}

export interface FakeProvider {
  name: ProviderName;
  wire: Wire;
  /** origin + the provider's path: the baseUrl to give (Azure: the resource URL, the origin) */
  url: string;
  origin: string;
  apiKey: string;
  requests: WireRequest[];
  inner: FakeOpenAI;
  behave(b: ProviderBehaviour): void;
  reset(): void;
  stop(): Promise<void>;
}

/** One provider's fake; pass `inner` to share one fake OpenAI upstream between several. */
export async function startFakeProvider(name: ProviderName, opts: { inner?: FakeOpenAI; apiKey?: string } = {}): Promise<FakeProvider> {
  const wire: Wire = WIRES[name];
  const ownInner = !opts.inner;
  const inner = opts.inner ?? (await startFakeOpenAI());
  const apiKey = opts.apiKey ?? `key-${name}-0123456789abcdef`;
  const requests: WireRequest[] = [];
  let behaviour: ProviderBehaviour = {};

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
    const raw = await readBody(req);
    let body: any;
    try { body = raw ? JSON.parse(raw) : undefined; } catch { body = undefined; }
    requests.push({ method: req.method ?? "GET", path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body });
    const fail = (status: number, message: string, field?: string, extra: Record<string, string> = {}) =>
      void res.writeHead(status, { "content-type": "application/json", ...extra }).end(JSON.stringify(wire.error(status, message, field)));

    // auth, as the provider checks it
    if (wire.auth === "bearer" && headers.authorization !== `Bearer ${apiKey}`) return fail(401, "Invalid API Key");
    if (wire.auth === "api-key") {
      if (headers.authorization) return fail(401, "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.");
      if (headers["api-key"] !== apiKey) return fail(401, "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.");
    }
    // the path: the provider's prefix, or (Azure) a deployment URL with its api-version
    let endpoint: string | undefined;
    const deployment = wire.deployments ? /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(url.pathname) : null;
    if (deployment) {
      if (!url.searchParams.get("api-version")) return fail(404, "Resource not found");
      endpoint = deployment[2];
      if (body && typeof body === "object") body = { ...body, model: decodeURIComponent(deployment[1]!) };
    } else if (url.pathname === `${wire.prefix}/chat/completions`) endpoint = "chat/completions";
    else if (url.pathname === `${wire.prefix}/embeddings`) endpoint = "embeddings";
    if (!endpoint || req.method !== "POST") return fail(404, `Unknown request URL: ${req.method} ${url.pathname}`);

    if (behaviour.status && behaviour.status >= 400) {
      const wait: Record<string, string> = behaviour.retryAfter === undefined ? {} : wire.retryHeader === "retry-after-ms" ? { "retry-after-ms": String(behaviour.retryAfter * 1000 - 500) } : { "retry-after": String(behaviour.retryAfter) };
      return fail(behaviour.status, behaviour.errorMessage ?? `fake ${name} error ${behaviour.status}`, undefined, wait);
    }
    // refused fields, as the provider refuses them
    if (endpoint === "chat/completions" && body && typeof body === "object") {
      const status = wire.error === mistralError ? 422 : 400;
      for (const f of wire.refuses ?? []) if (f in body) return fail(status, wire.error === googleError ? `Invalid JSON payload received. Unknown name "${f}": Cannot find field.` : `'${f}' is not supported`, f);
      if (wire.refusesStreamOptions && "stream_options" in body) return fail(status, "'stream_options' is not supported", "stream_options");
      for (const [i, m] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
        for (const f of wire.refusesMessageFields ?? []) if (m && typeof m === "object" && f in m) return fail(400, `'messages.${i}.${f}' is not supported`, `messages.${i}.${f}`);
      }
    }
    // forwarded to the shared fake, which makes the answer; its usage asked for whenever this provider sends usage unasked
    const forward = endpoint === "chat/completions" && body?.stream === true && wire.streamUsage !== "asked"
      ? { ...body, stream_options: { include_usage: true, ...(wire.streamUsage === "every-chunk" ? { continuous_usage_stats: true } : {}) } }
      : body;
    const innerBehaviour: FakeBehaviour = { ...behaviour, reasoningField: wire.reasoningField };
    const ac = new AbortController();
    res.on("close", () => { if (!res.writableFinished) ac.abort(); });
    let answer: Response;
    try {
      answer = await fetch(`${inner.origin}/v1/${endpoint}`, { method: "POST", headers: { "content-type": "application/json", "x-fake-behaviour": JSON.stringify(innerBehaviour) }, body: JSON.stringify(forward), signal: ac.signal });
    } catch {
      return void res.destroy();
    }
    const type = answer.headers.get("content-type") ?? "";
    if (!type.startsWith("text/event-stream")) {
      const json = await answer.json().catch(() => null);
      return void res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(json && answer.ok ? reshape(json, wire) : json));
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    if (wire.sseComments) res.write(": OPENROUTER PROCESSING\n\n");
    try {
      await relayStream(answer, res, wire, body?.stream_options?.include_usage === true);
    } catch {
      // the client or the inner fake went away
    }
    if (!res.destroyed) res.end();
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    name, wire, origin, apiKey, requests, inner,
    url: wire.deployments ? origin : origin + wire.prefix,
    behave(b) { behaviour = b; },
    reset() { requests.length = 0; behaviour = {}; },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      if (ownInner) await inner.stop();
    },
  };
}

/** An answer (or a chunk) in the provider's shape: DeepSeek's cache fields. */
function reshape(json: any, wire: Wire): any {
  const u = json?.usage;
  if (wire.cache === "deepseek" && u && typeof u === "object") {
    const hit = u.prompt_tokens_details?.cached_tokens ?? 0;
    const { prompt_tokens_details: _, ...rest } = u;
    json.usage = { ...rest, prompt_cache_hit_tokens: hit, prompt_cache_miss_tokens: u.prompt_tokens - hit };
  }
  return json;
}

/** The shared fake's SSE, event by event, as this provider streams: usage where it puts it. */
async function relayStream(answer: Response, res: ServerResponse, wire: Wire, asked: boolean): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  let held: any = null; // last-chunk: the finish chunk waits for the usage chunk, which it then carries
  const write = (data: string) => { if (!res.destroyed) res.write(`data: ${data}\n\n`); };
  for await (const bytes of answer.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let at = buffer.indexOf("\n\n"); at >= 0; at = buffer.indexOf("\n\n")) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (!event.startsWith("data: ")) continue;
      const data = event.slice(6);
      if (data === "[DONE]") {
        if (held) write(JSON.stringify(held));
        write("[DONE]");
        return;
      }
      let json: any;
      try { json = JSON.parse(data); } catch { write(data); continue; }
      json = reshape(json, wire);
      const usageChunk = Array.isArray(json.choices) && json.choices.length === 0 && json.usage;
      if (wire.streamUsage === "last-chunk") {
        if (usageChunk) { if (held) { held.usage = json.usage; write(JSON.stringify(held)); held = null; } continue; }
        if (json.choices?.[0]?.finish_reason) { held = json; continue; }
        delete json.usage;
      } else if (wire.streamUsage === "every-chunk" && usageChunk) continue;
      else if (wire.streamUsage === "asked" && !asked && usageChunk) continue;
      write(JSON.stringify(json));
    }
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}
