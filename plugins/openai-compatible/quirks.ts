/**
 * A provider's quirks (presets.ts), applied the same way whatever the provider: its URLs and auth
 * header, the request fields it refuses (left out) or names differently (renamed), and its answers
 * brought to OpenAI's shape — reasoning text in `reasoning_content`, prompt-cache hits in
 * `prompt_tokens_details.cached_tokens`, a stream's usage in a last `choices: []` chunk.
 * Nothing here knows a provider by name: the data says what to do.
 */
import { chunkEvent, PluginError, type ChatCompletion, type ChatCompletionChunk, type ChatStreamEvent } from "@reelay/plugin-sdk";
import type { OpenAICompatibleOptions } from "./options.ts";
import { presetOf, type AuthScheme, type CachedTokensField, type Preset, type ReasoningField } from "./presets.ts";

/** A preset with a model's (and a deployment's) overrides applied. */
export interface Quirks {
  auth: AuthScheme;
  headers: Record<string, string>;
  dropParams: ReadonlySet<string>;
  renameParams: ReadonlyArray<readonly [string, string]>;
  dropMessageFields: readonly string[];
  streamUsage: boolean;
  reasoningField: ReasoningField;
  cachedTokensField: CachedTokensField;
}

type Overrides = Pick<OpenAICompatibleOptions, "auth" | "headers" | "dropParams" | "renameParams" | "dropMessageFields" | "streamUsage" | "reasoningField" | "cachedTokensField">;

/** The quirks of one upstream: its preset's, each replaced by the model's option when given (headers merged, the deployment's last). */
export function quirksOf(preset: Preset, o: Overrides, deploymentHeaders?: Record<string, string>): Quirks {
  return {
    auth: o.auth ?? preset.auth,
    headers: { ...preset.headers, ...o.headers, ...deploymentHeaders },
    dropParams: new Set(o.dropParams ?? preset.dropParams ?? []),
    renameParams: Object.entries(o.renameParams ?? preset.renameParams ?? {}),
    dropMessageFields: o.dropMessageFields ?? preset.dropMessageFields ?? [],
    streamUsage: o.streamUsage ?? preset.streamUsage,
    reasoningField: o.reasoningField ?? preset.reasoningField,
    cachedTokensField: o.cachedTokensField ?? preset.cachedTokensField,
  };
}

/** The provider's URL for `endpoint`: base + the preset's path, or its versioned path + `?<query>=<apiVersion>`. */
export function endpointUrl(baseUrl: string, provider: string | undefined, apiVersion: string | undefined, model: string, endpoint: "chat/completions" | "embeddings"): string {
  const preset = presetOf(provider);
  const base = baseUrl.replace(/\/+$/, "");
  if (apiVersion !== undefined && preset.versioned) {
    return `${base}${preset.versioned.path.replace("{model}", encodeURIComponent(model))}/${endpoint}?${preset.versioned.query}=${encodeURIComponent(apiVersion)}`;
  }
  return `${base}${preset.path ?? ""}/${endpoint}`;
}

/** The headers carrying the key, by scheme. */
export function authHeaders(auth: AuthScheme, key: string | undefined): Record<string, string> {
  if (!key || auth === "none") return {};
  return auth === "api-key" ? { "api-key": key } : { authorization: `Bearer ${key}` };
}

const forcesTool = (choice: unknown) => choice === "required" || (typeof choice === "object" && choice !== null);

/**
 * The chat body as this provider takes it: `model` mapped, refused fields left out (a tool the
 * client forces with `tool_choice` cannot be left out: 400), renamed fields under their name,
 * refused message fields left out of every message.
 */
export function chatBody(body: Record<string, unknown>, q: Quirks, model: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model };
  if (q.dropParams.has("tools") && Array.isArray(body.tools) && body.tools.length > 0 && forcesTool(body.tool_choice)) {
    throw new PluginError("invalid_request", "This model cannot call tools, and tool_choice requires one.", { param: "tool_choice", code: "unsupported_parameter" });
  }
  for (const k of q.dropParams) delete out[k];
  for (const [from, to] of q.renameParams) {
    if (!(from in out)) continue;
    if (!(to in out)) out[to] = out[from];
    delete out[from];
  }
  if (q.dropMessageFields.length && Array.isArray(out.messages)) {
    out.messages = out.messages.map((m) => {
      if (typeof m !== "object" || m === null || !q.dropMessageFields.some((f) => f in m)) return m;
      const copy = { ...m } as Record<string, unknown>;
      for (const f of q.dropMessageFields) delete copy[f];
      return copy;
    });
  }
  return out;
}

/** Whether answers need reshaping at all (most providers: no, and their streams pass untouched). */
export function reshapesAnswers(q: Quirks): boolean {
  return !q.streamUsage || q.reasoningField !== "reasoning_content" || q.cachedTokensField !== "prompt_tokens_details.cached_tokens";
}

/** A non-streamed completion in OpenAI's shape (in place): reasoning in `reasoning_content`, cache hits in `prompt_tokens_details`. */
export function reshapeCompletion(c: ChatCompletion, q: Quirks): ChatCompletion {
  for (const choice of c.choices) if (choice?.message) moveReasoning(choice.message as unknown as Record<string, unknown>, q);
  if (c.usage) moveCachedTokens(c.usage as unknown as Record<string, unknown>, q);
  return c;
}

/**
 * A stream in OpenAI's shape: each chunk's reasoning and cache hits as in reshapeCompletion; for
 * a provider that puts usage on its content chunks (no `stream_options`), that usage taken off
 * them and sent as the last chunk before [DONE], `choices: []`, where reelay bills it.
 */
export async function* reshapeStream(events: AsyncIterable<ChatStreamEvent>, q: Quirks): AsyncGenerator<ChatStreamEvent> {
  let usage: Record<string, unknown> | undefined;
  let usageChunk: ChatCompletionChunk | undefined;
  for await (const e of events) {
    if (e.data === "[DONE]") {
      if (usageChunk && usage) yield chunkEvent({ ...usageChunk, choices: [], usage: usage as unknown as ChatCompletionChunk["usage"] });
      yield e;
      return;
    }
    const json = e.json as ChatCompletionChunk & Record<string, unknown>;
    let changed = false;
    for (const choice of json.choices ?? []) if (choice?.delta) changed = moveReasoning(choice.delta as Record<string, unknown>, q) || changed;
    if (json.usage && typeof json.usage === "object") {
      changed = moveCachedTokens(json.usage as unknown as Record<string, unknown>, q) || changed;
      if (!q.streamUsage && json.choices?.length) {
        usage = json.usage as unknown as Record<string, unknown>;
        usageChunk = json;
        delete json.usage;
        changed = true;
      } else if (!json.choices?.length) usageChunk = undefined; // the provider sent its own usage chunk after all
    }
    yield changed ? chunkEvent(json) : e;
  }
}

function moveReasoning(m: Record<string, unknown>, q: Quirks): boolean {
  if (q.reasoningField === "reasoning_content" || typeof m.reasoning !== "string") return false;
  if (m.reasoning_content === undefined || m.reasoning_content === null) m.reasoning_content = m.reasoning;
  delete m.reasoning;
  return true;
}

function moveCachedTokens(u: Record<string, unknown>, q: Quirks): boolean {
  if (q.cachedTokensField !== "prompt_cache_hit_tokens" || u.prompt_cache_hit_tokens === undefined) return false;
  const details = typeof u.prompt_tokens_details === "object" && u.prompt_tokens_details !== null ? u.prompt_tokens_details : {};
  u.prompt_tokens_details = { ...details, cached_tokens: u.prompt_cache_hit_tokens };
  return true;
}
