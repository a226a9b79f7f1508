/**
 * A fake Amazon Bedrock runtime: a real HTTP server on a loopback port speaking the Converse and
 * ConverseStream wire protocol (https://docs.aws.amazon.com/bedrock/latest/APIReference/), for the
 * bedrock plugin (its `baseUrl` is the AWS SDK's `endpoint`) and clients going through reelay.
 *
 *   const fake = await startFakeBedrock();
 *   fake.url, fake.credentials     // { accessKeyId, secretAccessKey }: what AWS_ACCESS_KEY_ID / … must hold
 *   startFakeBedrock({ apiKey })   // also accept a Bedrock API key as `Authorization: Bearer`
 *   fake.requests                  // method, path, modelId, headers, body, region and signature checked
 *   fake.behave(b), fake.aborts, fake.reset(), await fake.stop()
 *
 * Every request must be signed with SigV4 for service `bedrock` by those credentials: the fake
 * recomputes the signature (canonical request, string to sign, the HMAC chain) and answers 403
 * (UnrecognizedClientException for an unknown key id, InvalidSignatureException for a wrong
 * signature, as AWS does). Routes: POST /model/{modelId}/converse (JSON) and
 * /model/{modelId}/converse-stream (`application/vnd.amazon.eventstream`: binary frames with
 * `:event-type` / `:message-type` headers and CRCs, encoded by the SDK's own codec — messageStart,
 * contentBlockStart / contentBlockDelta / contentBlockStop, messageStop, metadata; an exception
 * mid-stream is a frame of `:message-type: exception`). Errors are Bedrock's: the
 * `x-amzn-errortype` header and `{message}` (ThrottlingException 429, ValidationException 400,
 * AccessDeniedException 403, ResourceNotFoundException 404, ModelNotReadyException 429,
 * ServiceUnavailableException 503, InternalServerException 500). Requests are validated as
 * Bedrock does where a translator can go wrong: known fields only, alternating user / assistant
 * turns starting with the user, no blank text, toolResult blocks answering the toolUse blocks of
 * the turn before, toolConfig present whenever tool blocks are, images as png / jpeg / gif / webp
 * bytes.
 *
 * The answer: `text` (default N = min(maxTokens, tokens ?? 16) words of REPLY_WORDS), cut at
 * inferenceConfig.maxTokens ("max_tokens") and before a stop sequence ("stop_sequence"); `reasoning`
 * first as a reasoningContent block (with a signature); `toolUse` answers a request offering tools
 * (unless its last turn carries tool results) with toolUse blocks ("tool_use"). Usage:
 * inputTokens = the prompt (cl100k tokens of every text, 3 per message, 85 per image) less
 * `cacheRead` and `cacheWrite`, reported as cacheReadInputTokens / cacheWriteInputTokens.
 */
import { createHash, createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { REPLY_WORDS } from "./openai-upstream.ts";

const encoder = new Tiktoken(cl100k_base);
const codec = new EventStreamCodec((b) => new TextDecoder().decode(b), (s) => new TextEncoder().encode(s));

export const FAKE_AWS = { accessKeyId: "AKIAFAKEBEDROCK00001", secretAccessKey: "fake/secret/0123456789abcdefghijklmnopqrst" };

export type BedrockException = "ThrottlingException" | "ValidationException" | "AccessDeniedException" | "ResourceNotFoundException" | "ModelNotReadyException" | "ServiceUnavailableException" | "InternalServerException" | "UnrecognizedClientException" | "InvalidSignatureException";
const EXCEPTION_STATUS: Record<BedrockException, number> = {
  ThrottlingException: 429, ValidationException: 400, AccessDeniedException: 403, ResourceNotFoundException: 404, ModelNotReadyException: 429,
  ServiceUnavailableException: 503, InternalServerException: 500, UnrecognizedClientException: 403, InvalidSignatureException: 403,
};
const BY_STATUS: Record<number, BedrockException> = { 400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException", 404: "ResourceNotFoundException", 429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException" };

export interface FakeBedrockBehaviour {
  tokens?: number;
  text?: string;
  reasoning?: string;
  toolUse?: Array<{ name: string; input: Record<string, unknown> }>;
  cacheRead?: number;
  cacheWrite?: number;
  stopReason?: string;
  /** answer this exception (its status; `status` alone picks the exception of that status) */
  exception?: BedrockException;
  status?: number;
  errorMessage?: string;
  /** with an exception: a Retry-After header */
  retryAfter?: number;
  /** stream: an exception frame after this many deltas (0: right after messageStart) */
  streamExceptionAfter?: number;
  streamException?: string;
  hang?: boolean;
  garbageBody?: string;
  resetAfterDeltas?: number;
  delayBetweenEventsMs?: number;
}

export interface BedrockRequest {
  method: string;
  path: string;
  modelId: string;
  headers: Record<string, string>;
  body: any;
  region?: string;
  aborted: boolean;
}

export interface FakeBedrock {
  url: string;
  port: number;
  credentials: typeof FAKE_AWS;
  requests: BedrockRequest[];
  aborts: number;
  behave(b: FakeBedrockBehaviour): void;
  reset(): void;
  stop(): Promise<void>;
}

class Refusal extends Error {
  constructor(readonly exception: BedrockException, message: string) { super(message); }
}

export async function startFakeBedrock(opts: { port?: number; behaviour?: FakeBedrockBehaviour; credentials?: typeof FAKE_AWS; apiKey?: string } = {}): Promise<FakeBedrock> {
  const credentials = opts.credentials ?? FAKE_AWS;
  const requests: BedrockRequest[] = [];
  let behaviour: FakeBedrockBehaviour = opts.behaviour ?? {};
  let aborts = 0;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
    const raw = await readBody(req);
    const route = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(url.pathname);
    const rec: BedrockRequest = { method: req.method ?? "GET", path: url.pathname, modelId: route ? decodeURIComponent(route[1]!) : "", headers, body: undefined, aborted: false };
    requests.push(rec);
    res.on("close", () => {
      if (!res.writableFinished && !rec.aborted) {
        rec.aborted = true;
        aborts++;
      }
    });
    const fail = (exception: BedrockException, message: string, status = EXCEPTION_STATUS[exception], extra: Record<string, string> = {}) =>
      void res.writeHead(status, { "content-type": "application/json", "x-amzn-errortype": `${exception}:http://internal.amazon.com/coral/com.amazon.bedrock/`, "x-amzn-requestid": crypto.randomUUID(), ...extra }).end(JSON.stringify({ message }));
    // a Bedrock API key (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys.html) instead of a signature
    const bearer = opts.apiKey !== undefined && headers.authorization === `Bearer ${opts.apiKey}`;
    const auth = bearer ? {} : checkSignature(req.method ?? "GET", url, headers, raw, credentials);
    if (auth.problem) return fail(auth.problem[0], auth.problem[1]);
    rec.region = auth.region;
    if (!route || req.method !== "POST") return fail("ResourceNotFoundException", `Unknown operation: ${req.method} ${url.pathname}`, 404);
    try {
      rec.body = JSON.parse(raw);
    } catch {
      return fail("ValidationException", "Malformed input request, please reformat your input and try again.");
    }
    const b = behaviour;
    if (b.hang) return;
    if (b.garbageBody !== undefined) return void res.writeHead(200, { "content-type": "text/html" }).end(b.garbageBody);
    const exception = b.exception ?? (b.status ? BY_STATUS[b.status] ?? "InternalServerException" : undefined);
    if (exception) {
      const message = b.errorMessage ?? (exception === "ThrottlingException" ? "Too many requests, please wait before trying again." : `fake Bedrock: ${exception}`);
      return fail(exception, message, b.status ?? EXCEPTION_STATUS[exception], b.retryAfter !== undefined ? { "retry-after": String(b.retryAfter) } : {});
    }
    try {
      const answer = answerOf(checkConverse(rec.body), b);
      if (route[2] === "converse") {
        return void res.writeHead(200, { "content-type": "application/json", "x-amzn-requestid": crypto.randomUUID() }).end(JSON.stringify({
          output: { message: { role: "assistant", content: answer.blocks } }, stopReason: answer.stopReason, usage: answer.usage, metrics: { latencyMs: 12 },
        }));
      }
      await stream(res, answer, b);
    } catch (err) {
      if (err instanceof Refusal) return fail(err.exception, err.message);
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
    credentials,
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

// ── SigV4, recomputed (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) ──

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;
const uriEscape = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();
const sha256 = (data: string) => createHash("sha256").update(data).digest("hex");

function checkSignature(method: string, url: URL, headers: Record<string, string>, body: string, creds: typeof FAKE_AWS): { problem?: [BedrockException, string]; region?: string } {
  const m = AUTH.exec(headers.authorization ?? "");
  if (!m) return { problem: ["AccessDeniedException", "Missing Authentication Token"] };
  const [, keyId, date, region, service, signedHeaders, signature] = m as unknown as string[];
  if (keyId !== creds.accessKeyId) return { problem: ["UnrecognizedClientException", "The security token included in the request is invalid."] };
  const amzDate = headers["x-amz-date"] ?? "";
  if (service !== "bedrock" || !amzDate.startsWith(date!)) return { problem: ["InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'."] };
  const path = url.pathname.split("/").map((seg) => uriEscape(seg)).join("/");
  const query = [...url.searchParams].map(([k, v]) => `${uriEscape(k)}=${uriEscape(v)}`).sort().join("&");
  const names = signedHeaders!.split(";");
  const canonicalHeaders = names.map((n) => `${n}:${(headers[n] ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const payload = headers["x-amz-content-sha256"] ?? sha256(body);
  if (payload !== sha256(body)) return { problem: ["InvalidSignatureException", "The provided x-amz-content-sha256 header does not match what was computed."] };
  const canonical = [method, path, query, canonicalHeaders, signedHeaders, payload].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, date!), region!), service!), "aws4_request");
  if (hmac(key, toSign).toString("hex") !== signature) return { problem: ["InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."] };
  return { region };
}

// ── the request, checked as Bedrock checks it ──

const FIELDS = ["messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig", "additionalModelRequestFields", "additionalModelResponseFieldPaths", "promptVariables", "requestMetadata", "performanceConfig"];
const INFERENCE_FIELDS = ["maxTokens", "temperature", "topP", "stopSequences"];
const BLOCK_FIELDS = ["text", "image", "document", "toolUse", "toolResult", "reasoningContent", "cachePoint", "video", "guardContent"];

function checkConverse(body: any) {
  for (const k of Object.keys(body)) if (!FIELDS.includes(k)) throw new Refusal("ValidationException", `Malformed input request: extraneous key [${k}] is not permitted, please reformat your input and try again.`);
  for (const k of Object.keys(body.inferenceConfig ?? {})) if (!INFERENCE_FIELDS.includes(k)) throw new Refusal("ValidationException", `Malformed input request: extraneous key [inferenceConfig.${k}] is not permitted.`);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new Refusal("ValidationException", "A conversation must start with a user message. Try again with a conversation that starts with a user message.");
  let toolBlocks = false;
  for (const [i, m] of messages.entries()) {
    if (m.role !== (i % 2 === 0 ? "user" : "assistant")) throw new Refusal("ValidationException", "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.");
    if (!Array.isArray(m.content) || m.content.length === 0) throw new Refusal("ValidationException", `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`);
    for (const c of m.content) {
      const keys = Object.keys(c);
      if (keys.length !== 1 || !BLOCK_FIELDS.includes(keys[0]!)) throw new Refusal("ValidationException", `Malformed input request: messages.${i}.content: a ContentBlock has exactly one of ${BLOCK_FIELDS.join(", ")}`);
      if (c.text !== undefined && !String(c.text).trim()) throw new Refusal("ValidationException", `The text field in the ContentBlock object at messages.${i}.content is blank. Add text to the text field, and try again.`);
      if (c.image && (!["png", "jpeg", "gif", "webp"].includes(c.image.format) || typeof c.image.source?.bytes !== "string")) throw new Refusal("ValidationException", `messages.${i}: an image needs a format (png, jpeg, gif, webp) and its bytes`);
      if (c.toolUse || c.toolResult) toolBlocks = true;
    }
    const results = m.content.filter((c: any) => c.toolResult).map((c: any) => c.toolResult.toolUseId);
    if (results.length) {
      const uses = (messages[i - 1]?.content ?? []).filter((c: any) => c.toolUse).map((c: any) => c.toolUse.toolUseId);
      if (results.length !== uses.length || results.some((id: string) => !uses.includes(id))) throw new Refusal("ValidationException", `Expected toolResult blocks at messages.${i}.content for the following Ids: ${uses.join(", ")}`);
    }
  }
  if (toolBlocks && !body.toolConfig) throw new Refusal("ValidationException", "The toolConfig field must be defined when using toolUse and toolResult content blocks.");
  for (const t of body.toolConfig?.tools ?? []) if (!t.cachePoint && (!t.toolSpec?.name || !t.toolSpec?.inputSchema?.json)) throw new Refusal("ValidationException", "toolConfig.tools: a toolSpec needs a name and an inputSchema.json");
  return body;
}

function promptTokens(body: any): number {
  let n = 0;
  const count = (blocks: any[]) => {
    for (const c of blocks ?? []) {
      if (typeof c.text === "string") n += encoder.encode(c.text).length;
      if (c.image) n += 85;
      if (c.toolUse) n += encoder.encode(c.toolUse.name + JSON.stringify(c.toolUse.input)).length;
      if (c.toolResult) for (const r of c.toolResult.content ?? []) n += encoder.encode(r.text ?? JSON.stringify(r.json ?? "")).length;
    }
  };
  count(body.system);
  for (const m of body.messages) {
    n += 3;
    count(m.content);
  }
  return n;
}

interface Answer { blocks: any[]; stopReason: string; usage: Record<string, number> }

function answerOf(body: any, b: FakeBedrockBehaviour): Answer {
  const prompt = promptTokens(body);
  const max = body.inferenceConfig?.maxTokens ?? Infinity;
  const blocks: any[] = [];
  let output = 0;
  if (b.reasoning) {
    blocks.push({ reasoningContent: { reasoningText: { text: b.reasoning, signature: `sig-${b.reasoning.length}` } } });
    output += encoder.encode(b.reasoning).length;
  }
  const offered = (body.toolConfig?.tools ?? []).length > 0;
  const answered = body.messages.at(-1).content.some((c: any) => c.toolResult);
  let stopReason = "end_turn";
  if (b.toolUse?.length && offered && !answered) {
    for (const [i, t] of b.toolUse.entries()) {
      blocks.push({ toolUse: { toolUseId: `tooluse_fake${i}${Math.random().toString(36).slice(2, 8)}`, name: t.name, input: t.input } });
      output += encoder.encode(t.name + JSON.stringify(t.input)).length;
    }
    stopReason = "tool_use";
  } else {
    let text = b.text ?? Array.from({ length: Math.min(b.tokens ?? 16, 64) }, (_, i) => REPLY_WORDS[i % REPLY_WORDS.length]).join("");
    for (const s of body.inferenceConfig?.stopSequences ?? []) {
      if (text.includes(s)) {
        text = text.slice(0, text.indexOf(s));
        stopReason = "stop_sequence";
      }
    }
    const tokens = encoder.encode(text);
    if (tokens.length > max) stopReason = "max_tokens";
    const kept = tokens.slice(0, max);
    blocks.push({ text: encoder.decode(kept) });
    output += kept.length;
  }
  const read = b.cacheRead ?? 0;
  const write = b.cacheWrite ?? 0;
  const input = prompt - read - write;
  return {
    blocks, stopReason: b.stopReason ?? stopReason,
    usage: { inputTokens: input, outputTokens: output, totalTokens: input + read + write + output, ...(b.cacheRead !== undefined ? { cacheReadInputTokens: read } : {}), ...(b.cacheWrite !== undefined ? { cacheWriteInputTokens: write } : {}) },
  };
}

// ── ConverseStream: application/vnd.amazon.eventstream ──

function frame(type: string, payload: unknown, kind: "event" | "exception" = "event"): Uint8Array {
  const body = new TextEncoder().encode(JSON.stringify({ ...(payload as object), ...(kind === "event" ? { p: "abcdefghij".slice(0, 1 + Math.floor(Math.random() * 9)) } : {}) }));
  return codec.encode({
    headers: {
      ":message-type": { type: "string", value: kind },
      [kind === "event" ? ":event-type" : ":exception-type"]: { type: "string", value: type },
      ":content-type": { type: "string", value: "application/json" },
    },
    body,
  });
}

async function stream(res: ServerResponse, a: Answer, b: FakeBedrockBehaviour): Promise<void> {
  res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": crypto.randomUUID() });
  res.flushHeaders();
  const send = async (f: Uint8Array) => {
    if (b.delayBetweenEventsMs) await Bun.sleep(b.delayBetweenEventsMs);
    if (!res.destroyed) res.write(f);
  };
  await send(frame("messageStart", { role: "assistant" }));
  if (b.streamExceptionAfter === 0) {
    await send(frame(b.streamException ?? "modelStreamErrorException", { message: "The model stream failed." }, "exception"));
    return void res.end();
  }
  let deltas = 0;
  for (const [index, block] of a.blocks.entries()) {
    const pieces: any[] = [];
    if (block.text !== undefined) pieces.push(...encoder.encode(block.text).map((t) => ({ text: encoder.decode([t]) })));
    if (block.reasoningContent) pieces.push(...encoder.encode(block.reasoningContent.reasoningText.text).map((t) => ({ reasoningContent: { text: encoder.decode([t]) } })), { reasoningContent: { signature: block.reasoningContent.reasoningText.signature } });
    if (block.toolUse) {
      await send(frame("contentBlockStart", { contentBlockIndex: index, start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } } }));
      const json = JSON.stringify(block.toolUse.input);
      const third = Math.ceil(json.length / 3);
      pieces.push(...[json.slice(0, third), json.slice(third, 2 * third), json.slice(2 * third)].filter(Boolean).map((input) => ({ toolUse: { input } })));
    }
    for (const delta of pieces) {
      if (res.destroyed) return;
      await send(frame("contentBlockDelta", { contentBlockIndex: index, delta }));
      deltas++;
      if (b.streamExceptionAfter === deltas) {
        await send(frame(b.streamException ?? "modelStreamErrorException", { message: "The model stream failed." }, "exception"));
        return void res.end();
      }
      if (b.resetAfterDeltas === deltas) {
        await Bun.sleep(100); // the frames before the reset read by the client first (an RST drops what it had not read)
        return void (res.socket?.resetAndDestroy?.() ?? res.destroy());
      }
    }
    await send(frame("contentBlockStop", { contentBlockIndex: index }));
  }
  await send(frame("messageStop", { stopReason: a.stopReason }));
  await send(frame("metadata", { usage: a.usage, metrics: { latencyMs: 12 } }));
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}
