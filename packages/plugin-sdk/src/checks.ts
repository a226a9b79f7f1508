/**
 * What the host checks in everything a plugin returns, before it bills or relays it. reelay runs
 * these on every call (a violation is a 502 or a failed job naming plugin and model, with nothing
 * charged); the contract runner runs them too, so a plugin that passes its contract passes here.
 * Each returns null when the value is fine, else the problem in words.
 */
import { MAX_HANDLE_LENGTH, type ModelInstance } from "./capabilities.ts";
import { isVideoSize } from "./pricing.ts";

export interface UsageAllowance {
  /** the most prompt tokens the request may be billed for */
  prompt?: number;
  /** the most completion tokens: max_tokens × n when the request bounds them */
  completion?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A short rendering of a bad value for messages (`"3"`, `NaN`, `undefined`, `an array`). */
export function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  if (Array.isArray(v)) return "an array";
  if (v instanceof Uint8Array) return `${v.byteLength} bytes`;
  if (typeof v === "object" && v !== null) return "an object";
  return String(v);
}

/** Usage a plugin vouches for: each field a safe integer ≥ 0, within the allowance. */
export function problemWithUsage(u: unknown, fields: ReadonlyArray<"prompt_tokens" | "completion_tokens">, allowed: UsageAllowance = {}): string | null {
  if (!isObject(u)) return `usage is ${show(u)}, not an object`;
  for (const f of fields) {
    const v = u[f];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) return `usage.${f} is ${show(v)}, not an integer ≥ 0`;
    const max = f === "prompt_tokens" ? allowed.prompt : allowed.completion;
    if (max !== undefined && v > max) return `usage.${f} is ${v}, more than the ${Math.floor(max)} this request allows`;
  }
  const details = u.prompt_tokens_details;
  if (fields.includes("prompt_tokens") && isObject(details)) {
    let cache = 0;
    for (const f of ["cached_tokens", "cache_write_tokens"] as const) {
      const v = details[f];
      if (v === undefined || v === null) continue;
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) return `usage.prompt_tokens_details.${f} is ${show(v)}, not an integer ≥ 0`;
      cache += v;
    }
    if (cache > (u.prompt_tokens as number)) return `usage.prompt_tokens_details counts ${cache} cache tokens, more than the ${u.prompt_tokens as number} prompt tokens they are part of`;
  }
  return null;
}

/** complete() → `{completion, usage?, upstreamUsage?}` with OpenAI's completion shape. */
export function problemWithChatResult(r: unknown, allowed: UsageAllowance = {}): string | null {
  if (!isObject(r)) return `complete() returned ${show(r)} instead of { completion, usage? }`;
  const c = r.completion;
  if (!isObject(c)) return `complete() returned completion ${show(c)}, not a chat.completion object`;
  if (!Array.isArray(c.choices) || c.choices.length === 0) return "completion.choices is not a non-empty array";
  for (const [i, choice] of c.choices.entries()) {
    if (!isObject(choice) || !isObject(choice.message)) return `completion.choices[${i}] has no message object`;
    const content = choice.message.content;
    if (content !== null && content !== undefined && typeof content !== "string") return `completion.choices[${i}].message.content is ${show(content)}, not a string or null`;
  }
  if (r.usage !== undefined) return problemWithUsage(r.usage, ["prompt_tokens", "completion_tokens"], allowed);
  return null;
}

/**
 * One stream event: `data` a string, and unless it is `[DONE]`, `json` the parsed object, `data`
 * its JSON text. (The host checks that `data` is JSON object text by its first character, not by
 * parsing it again: a chat stream is hundreds of events.) A chunk's `choices` must be an array; an
 * object without choices passes (an OpenAI-style `{"error": …}` event a relay passes on).
 */
export function problemWithStreamEvent(e: unknown): string | null {
  if (!isObject(e) || typeof e.data !== "string") return `the stream yielded ${show(e)}, not { data, json }`;
  if (e.data === "[DONE]") return null;
  if (!isObject(e.json)) return `a stream event has no parsed JSON object in \`json\` (data: ${show(e.data)})`;
  if (e.data.trimStart()[0] !== "{") return `a stream event's data is not JSON text: ${show(e.data)}`;
  if (e.json.choices !== undefined && !Array.isArray(e.json.choices)) return `a stream event's choices is ${show(e.json.choices)}, not an array`;
  return null;
}

/** messages.create() → `{ message, upstreamUsage? }`, `message` an Anthropic `message` object with content blocks. */
export function problemWithMessagesResult(r: unknown): string | null {
  if (!isObject(r)) return `messages.create() returned ${show(r)} instead of { message }`;
  const m = r.message;
  if (!isObject(m) || m.type !== "message") return `messages.create() returned message ${isObject(m) ? `of type ${show(m.type)}` : show(m)}, not an Anthropic message object (type "message")`;
  if (!Array.isArray(m.content)) return `message.content is ${show(m.content)}, not an array of content blocks`;
  for (const [i, b] of m.content.entries()) if (!isObject(b) || typeof b.type !== "string") return `message.content[${i}] is ${show(b)}, not a content block with a type`;
  return null;
}

/**
 * One streamed Messages event: `event` a name (no line breaks), `data` JSON object text, `json`
 * that object with `type` equal to `event` (checked by the first character, as chat events are).
 */
export function problemWithMessagesEvent(e: unknown): string | null {
  if (!isObject(e) || typeof e.event !== "string" || typeof e.data !== "string") return `the messages stream yielded ${show(e)}, not { event, data, json }`;
  if (!/^[a-z_]{1,64}$/.test(e.event)) return `a messages stream event is named ${show(e.event)}; names are like content_block_delta`;
  if (!isObject(e.json)) return `a messages stream event has no parsed JSON object in \`json\` (data: ${show(e.data)})`;
  if (e.data.trimStart()[0] !== "{") return `a messages stream event's data is not JSON text: ${show(e.data)}`;
  if (e.json.type !== e.event) return `a messages stream event named ${show(e.event)} carries type ${show(e.json.type)}`;
  return null;
}

/** messages.countTokens() → `{ input_tokens }`, an integer ≥ 0. */
export function problemWithTokenCount(r: unknown): string | null {
  if (!isObject(r)) return `messages.countTokens() returned ${show(r)} instead of { input_tokens }`;
  const n = r.input_tokens;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) return `messages.countTokens() returned input_tokens ${show(n)}, not an integer ≥ 0`;
  return null;
}

/** embed() → one vector per input, indexes 0..n-1 each once. */
export function problemWithEmbeddings(r: unknown, inputs: number, allowed: UsageAllowance = {}): string | null {
  if (!isObject(r)) return `embed() returned ${show(r)} instead of { data, usage? }`;
  if (!Array.isArray(r.data)) return "embed() returned no data array";
  if (inputs > 0 && r.data.length !== inputs) return `embed() returned ${r.data.length} vectors for ${inputs} inputs`;
  const seen = new Set<number>();
  for (const [i, d] of r.data.entries()) {
    if (!isObject(d)) return `data[${i}] is ${show(d)}, not { index, embedding }`;
    const index = d.index;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= r.data.length || seen.has(index)) return `data[${i}].index is ${show(index)}: indexes must be 0..${r.data.length - 1}, each once`;
    seen.add(index);
    const v = d.embedding;
    const ok = (v instanceof Float32Array || Array.isArray(v) || typeof v === "string") && (v as { length: number }).length > 0;
    if (!ok || (Array.isArray(v) && typeof v[0] !== "number")) return `data[${i}].embedding is ${show(v)}, not a Float32Array, an array of numbers or a base64 string`;
  }
  if (r.usage !== undefined) return problemWithUsage(r.usage, ["prompt_tokens"], allowed);
  return null;
}

export function problemWithHandle(r: unknown): string | null {
  if (!isObject(r)) return `submit() returned ${show(r)} instead of { handle }`;
  const h = r.handle;
  if (typeof h !== "string" || h === "") return `submit() returned handle ${show(h)}; a handle is a non-empty string`;
  if (h.length > MAX_HANDLE_LENGTH) return `submit() returned a handle of ${h.length} characters (at most ${MAX_HANDLE_LENGTH})`;
  return null;
}

/** An MP4 starts with a well-formed `ftyp` box: size 16…length, type "ftyp", a printable major brand. */
export function isMp4(bytes: unknown): boolean {
  if (!(bytes instanceof Uint8Array) || bytes.byteLength < 16) return false;
  const size = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  if (size < 16 || size > bytes.byteLength) return false;
  if (bytes[4] !== 0x66 || bytes[5] !== 0x74 || bytes[6] !== 0x79 || bytes[7] !== 0x70) return false;
  for (let i = 8; i < 12; i++) if (bytes[i]! < 0x20 || bytes[i]! > 0x7e) return false;
  return true;
}

const STATES = new Set(["queued", "running", "succeeded", "failed", "lost"]);

/** poll() → a known state; progress a fraction 0–1; an MP4 or an http(s) URL; a failure with a code. */
export function problemWithPollResult(r: unknown): string | null {
  if (!isObject(r) || !STATES.has(r.state as string)) return `poll() returned ${isObject(r) ? `state ${show(r.state)}` : show(r)}; states are queued, running, succeeded, failed, lost`;
  switch (r.state) {
    case "running":
      if (r.progress !== undefined && (typeof r.progress !== "number" || !Number.isFinite(r.progress) || r.progress < 0 || r.progress > 1)) {
        return `poll() reported progress ${show(r.progress)}; progress is a fraction from 0 to 1, not a percentage`;
      }
      return null;
    case "succeeded":
      if ("mp4" in r && r.mp4 !== undefined) return isMp4(r.mp4) ? null : `poll() succeeded with ${show(r.mp4)} that are not an MP4 (no ftyp box first)`;
      if (typeof r.url === "string" && /^https?:\/\//i.test(r.url)) return null;
      return `poll() succeeded with neither mp4 bytes nor an http(s) url (got url ${show(r.url)})`;
    case "failed":
      if (typeof r.code !== "string" || !/^[\w.:-]{1,100}$/.test(r.code)) return `poll() failed with code ${show(r.code)}; a code is a short word like "content_policy"`;
      if (typeof r.message !== "string") return `poll() failed with message ${show(r.message)}, not a string`;
      if (r.retryable !== undefined && typeof r.retryable !== "boolean") return `poll() failed with retryable ${show(r.retryable)}, not a boolean`;
      return null;
  }
  return null;
}

const positiveInt = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 1);

/**
 * What `create` returned, as the host checks it at boot: the methods it will call exist and the
 * limits are positive integers. A chat capability without `stream()` is fine: reelay answers
 * `stream: true` from `complete()`.
 */
export function problemsWithInstance(instance: unknown): string[] {
  if (typeof instance !== "object" || instance === null) return [`create() returned ${show(instance)}, not a model instance`];
  const i = instance as ModelInstance;
  const fn = (v: unknown) => typeof v === "function";
  const problems: string[] = [];
  if (!i.chat && !i.embeddings && !i.video) problems.push("no capability (chat, embeddings or video)");
  if (i.chat) {
    if (!fn(i.chat.complete)) problems.push("chat has no complete() function");
    if (i.chat.stream !== undefined && !fn(i.chat.stream)) problems.push("chat.stream is not a function");
  }
  if (i.messages) {
    if (!i.chat) problems.push("messages without chat: a model that speaks the Messages API natively must also serve chat (every other API goes through it)");
    if (!fn(i.messages.create)) problems.push("messages has no create() function");
    for (const k of ["stream", "countTokens"] as const) if (i.messages[k] !== undefined && !fn(i.messages[k])) problems.push(`messages.${k} is not a function`);
  }
  if (i.embeddings) {
    if (!fn(i.embeddings.embed)) problems.push("embeddings has no embed() function");
    if (typeof i.embeddings.supportsDimensions !== "boolean") problems.push("embeddings.supportsDimensions must be true or false");
    for (const k of ["maxInputs", "maxInputTokens", "maxInputChars"] as const) if (!positiveInt(i.embeddings[k])) problems.push(`embeddings.${k} must be a positive integer`);
  }
  if (i.video) {
    if (!fn(i.video.submit) || !fn(i.video.poll)) problems.push("video needs submit() and poll() functions");
    if (i.video.cancel !== undefined && !fn(i.video.cancel)) problems.push("video.cancel is not a function");
    if (i.video.webhook !== undefined && !fn(i.video.webhook)) problems.push("video.webhook is not a function");
    for (const k of ["maxConcurrency", "maxQueued", "pollIntervalMs"] as const) if (!positiveInt(i.video[k])) problems.push(`video.${k} must be a positive integer`);
    if (i.video.sizes !== undefined && (!Array.isArray(i.video.sizes) || i.video.sizes.length === 0 || i.video.sizes.some((v) => !isVideoSize(v)))) {
      problems.push(`video.sizes must be a non-empty list of "WIDTHxHEIGHT" sizes with even numbers from 16 to 4096 (got ${show(i.video.sizes)})`);
    }
    if (i.video.seconds !== undefined && (!Array.isArray(i.video.seconds) || i.video.seconds.length === 0 || i.video.seconds.some((v) => !Number.isSafeInteger(v) || v < 1 || v > 3600))) {
      problems.push(`video.seconds must be a non-empty list of whole seconds from 1 to 3600 (got ${show(i.video.seconds)})`);
    }
    if (i.video.remix !== undefined && typeof i.video.remix !== "boolean") problems.push("video.remix must be true or false");
  }
  for (const k of ["load", "unload", "close"] as const) if (i[k] !== undefined && !fn(i[k])) problems.push(`${k} is not a function`);
  return problems;
}

