/** Per-model options of the openai-compatible plugin: validation (boot) and parsing with defaults. */

export type Capability = "chat" | "embeddings";

export interface Timeouts {
  /**
   * Streamed calls: request start → response headers. Covers DNS, TCP, TLS and the upstream
   * accepting the request (vLLM, OpenAI and llama.cpp send stream headers before generating).
   * Bun's fetch exposes no "connected" event, so this is the earliest point we can observe.
   * Servers that hold the headers until the first token (Ollama under load) need a larger value.
   */
  connectMs: number;
  /** Streamed calls: response headers → first body byte (queueing + prefill, i.e. time to first token). */
  firstByteMs: number;
  /** Gap between two body chunks, both calls. */
  idleMs: number;
  /**
   * The whole call, body included. A non-streamed upstream sends its headers only when the whole
   * completion is done, so before the headers `complete` is bounded by this alone.
   */
  totalMs: number;
}

export interface Limits {
  /**
   * Largest non-streamed answer read, bytes; beyond it the call fails (502) and the hold is
   * released. A 200 MB upstream answer raised reelay's RSS by 389 MiB before this cap existed.
   * Default 16 MiB for chat (128 choices × 32k tokens of text is ~16 MB) and 128 MiB for
   * embeddings (2,048 inputs × 3,072 dimensions as JSON floats is ~125 MB).
   */
  maxResponseBytes?: number;
  /** Largest single streamed event, bytes (default 1 MiB; a chat chunk is well under 10 KB). */
  maxEventBytes: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = { chat: 16 * 1024 * 1024, embeddings: 128 * 1024 * 1024 } as const;
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

export interface OpenAICompatibleOptions {
  /** includes the /v1 part, like the OpenAI SDK's baseURL; no trailing slash */
  baseUrl: string;
  apiKeyEnv?: string;
  upstreamModel?: string;
  timeouts: Timeouts;
  continuousUsageStats: boolean;
  capabilities: Capability[];
  limits: Limits;
}

export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, firstByteMs: 60_000, idleMs: 30_000, totalMs: 600_000 };

const KNOWN = new Set(["baseUrl", "apiKeyEnv", "upstreamModel", "timeouts", "continuousUsageStats", "capabilities", "limits"]);
const CAPABILITIES = new Set<string>(["chat", "embeddings"]);

export function validateOptions(o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(o)) if (!KNOWN.has(key)) problems.push(`unknown option "${key}"`);

  if (typeof o.baseUrl !== "string" || o.baseUrl === "") problems.push(`"baseUrl" is required (e.g. "http://localhost:8000/v1")`);
  else {
    let url: URL | undefined;
    try { url = new URL(o.baseUrl); } catch { problems.push(`"baseUrl" is not a valid URL: ${o.baseUrl}`); }
    if (url && url.protocol !== "http:" && url.protocol !== "https:") problems.push(`"baseUrl" must be http or https, got ${url.protocol}`);
    if (url && (url.search || url.hash)) problems.push(`"baseUrl" must not have a query or fragment`);
  }
  if (o.apiKeyEnv !== undefined && (typeof o.apiKeyEnv !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(o.apiKeyEnv))) {
    problems.push(`"apiKeyEnv" must be the name of an environment variable (not the key itself)`);
  }
  if (o.upstreamModel !== undefined && (typeof o.upstreamModel !== "string" || o.upstreamModel === "")) problems.push(`"upstreamModel" must be a non-empty string`);
  if (o.continuousUsageStats !== undefined && typeof o.continuousUsageStats !== "boolean") problems.push(`"continuousUsageStats" must be a boolean`);

  if (o.timeouts !== undefined) {
    if (typeof o.timeouts !== "object" || o.timeouts === null || Array.isArray(o.timeouts)) problems.push(`"timeouts" must be an object`);
    else {
      for (const [key, value] of Object.entries(o.timeouts)) {
        if (!(key in DEFAULT_TIMEOUTS)) problems.push(`unknown option "timeouts.${key}" (known: ${Object.keys(DEFAULT_TIMEOUTS).join(", ")})`);
        else if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) problems.push(`"timeouts.${key}" must be a positive number of milliseconds`);
      }
    }
  }
  if (o.limits !== undefined) {
    if (typeof o.limits !== "object" || o.limits === null || Array.isArray(o.limits)) problems.push(`"limits" must be an object`);
    else {
      for (const [key, value] of Object.entries(o.limits)) {
        if (key !== "maxResponseBytes" && key !== "maxEventBytes") problems.push(`unknown option "limits.${key}" (known: maxResponseBytes, maxEventBytes)`);
        else if (!Number.isSafeInteger(value) || (value as number) < 1024) problems.push(`"limits.${key}" must be an integer number of bytes, at least 1024`);
      }
    }
  }
  if (o.capabilities !== undefined) {
    if (!Array.isArray(o.capabilities) || o.capabilities.length === 0) problems.push(`"capabilities" must be a non-empty array of "chat" | "embeddings"`);
    else for (const c of o.capabilities) if (!CAPABILITIES.has(c)) problems.push(`"capabilities" has unknown entry ${JSON.stringify(c)} (known: chat, embeddings)`);
  }
  return problems;
}

/** Assumes validateOptions found no problems. */
export function parseOptions(o: Record<string, unknown>): OpenAICompatibleOptions {
  return {
    baseUrl: String(o.baseUrl).replace(/\/+$/, ""),
    apiKeyEnv: o.apiKeyEnv as string | undefined,
    upstreamModel: o.upstreamModel as string | undefined,
    timeouts: { ...DEFAULT_TIMEOUTS, ...(o.timeouts as Partial<Timeouts> | undefined) },
    continuousUsageStats: o.continuousUsageStats === true,
    capabilities: (o.capabilities as Capability[] | undefined) ?? ["chat"],
    limits: { maxEventBytes: DEFAULT_MAX_EVENT_BYTES, ...(o.limits as Partial<Limits> | undefined) },
  };
}
