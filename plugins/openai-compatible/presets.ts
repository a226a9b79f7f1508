/**
 * Upstream providers by name: `provider: <name>` in a model's options sets the base URL, the auth
 * scheme and what the provider does differently from OpenAI's chat API. Each preset is data, read
 * by quirks.ts the same way for every provider; a model's own options override each field
 * (options.ts: `baseUrl`, `apiKeyEnv`, `auth`, `headers`, `dropParams`, `renameParams`,
 * `dropMessageFields`, `streamUsage`, `reasoningField`, `cachedTokensField`).
 *
 * Adding a provider is one entry here (with the page its quirks come from), one row in
 * docs/providers/presets.md (a test compares the two) and a fake of its wire format in
 * test/fakes/openai-presets.ts.
 */

/** How the key is sent: `Authorization: Bearer <key>`, Azure's `api-key: <key>`, or not at all. */
export type AuthScheme = "bearer" | "api-key" | "none";

/** Where a provider puts the model's reasoning text in a message or a delta. */
export type ReasoningField = "reasoning_content" | "reasoning";

/** Where a provider reports prompt-cache hits in its usage. */
export type CachedTokensField = "prompt_tokens_details.cached_tokens" | "prompt_cache_hit_tokens";

export interface Preset {
  /** shown in docs and logs */
  title: string;
  /** the API base as the OpenAI SDK's baseURL takes it; none: the model must give `baseUrl` */
  baseUrl?: string;
  /** appended to the base URL before `/chat/completions` and `/embeddings` (Azure: the resource URL + `/openai/v1`) */
  path?: string;
  /**
   * with the model's `apiVersion` option: the path instead of `path` (`{model}` is the upstream
   * model, URL-encoded) and the query parameter carrying the version (Azure's deployment URLs)
   */
  versioned?: { path: string; query: string };
  auth: AuthScheme;
  /** the environment variable read for the key when the model names none */
  apiKeyEnv?: string;
  /** sent on every call (OpenRouter's attribution); a model's `headers` add to or replace these */
  headers?: Record<string, string>;
  /** request fields the provider refuses (400 / 422): left out of what is sent */
  dropParams?: string[];
  /** request fields the provider takes under another name: sent under that name */
  renameParams?: Record<string, string>;
  /** fields of each message the provider refuses: left out of every message sent */
  dropMessageFields?: string[];
  /**
   * true: asked with `stream_options.include_usage`, the provider ends a stream with a usage chunk.
   * false: it refuses or ignores `stream_options`, so none is sent; the usage it puts on its last
   * chunks becomes the usage chunk (or reelay counts the tokens itself).
   */
  streamUsage: boolean;
  /** `reasoning`: the provider's reasoning text is renamed `reasoning_content` for the client */
  reasoningField: ReasoningField;
  /** `prompt_cache_hit_tokens`: copied into `prompt_tokens_details.cached_tokens`, which reelay bills */
  cachedTokensField: CachedTokensField;
}

const OPENAI_LIKE = { auth: "bearer", streamUsage: true, reasoningField: "reasoning_content", cachedTokensField: "prompt_tokens_details.cached_tokens" } as const;
const LOCAL = { ...OPENAI_LIKE, auth: "none" } as const;

export const PRESETS = {
  // https://platform.openai.com/docs/api-reference/chat/create (stream_options.include_usage;
  // usage.prompt_tokens_details.cached_tokens). The reference every other entry differs from.
  openai: { ...OPENAI_LIKE, title: "OpenAI", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" },

  // https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle (the v1 API:
  // <resource>/openai/v1/…, no api-version) and …/openai/reference (deployment URLs
  // /openai/deployments/<deployment>/…?api-version=…, the key in an `api-key` header).
  // 429s carry `retry-after-ms` (…/openai/how-to/quota), read by the SDK.
  "azure-openai": {
    ...OPENAI_LIKE, title: "Azure OpenAI", auth: "api-key", apiKeyEnv: "AZURE_OPENAI_API_KEY",
    path: "/openai/v1", versioned: { path: "/openai/deployments/{model}", query: "api-version" },
  },

  // https://ai.google.dev/gemini-api/docs/openai: Bearer key, stream_options.include_usage
  // supported. The endpoint parses bodies as protobuf JSON and answers 400 "Unknown name" for a
  // field it does not define: OpenAI's account-side fields are left out.
  gemini: {
    ...OPENAI_LIKE, title: "Google Gemini (OpenAI-compatible endpoint)", baseUrl: "https://generativelanguage.googleapis.com/v1beta/openai", apiKeyEnv: "GEMINI_API_KEY",
    dropParams: ["store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"],
  },

  // https://docs.mistral.ai/api/#tag/chat: undeclared fields are refused (422 "Extra inputs are
  // not permitted"); the seed is `random_seed`, the limit `max_tokens`; usage comes on the last
  // chunk of every stream without asking, and `stream_options` is not a field.
  mistral: {
    ...OPENAI_LIKE, title: "Mistral AI", baseUrl: "https://api.mistral.ai/v1", apiKeyEnv: "MISTRAL_API_KEY", streamUsage: false,
    renameParams: { seed: "random_seed", max_completion_tokens: "max_tokens" },
    dropParams: ["logit_bias", "logprobs", "top_logprobs", "user", "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"],
  },

  // https://console.groq.com/docs/openai: "logprobs, logit_bias, top_logprobs, messages[].name …
  // will result in a 400 error". https://console.groq.com/docs/reasoning: reasoning_format
  // "parsed" puts the reasoning in `message.reasoning`.
  groq: {
    ...OPENAI_LIKE, title: "Groq", baseUrl: "https://api.groq.com/openai/v1", apiKeyEnv: "GROQ_API_KEY",
    dropParams: ["logprobs", "logit_bias", "top_logprobs"], dropMessageFields: ["name"], reasoningField: "reasoning",
  },

  // https://docs.together.ai/docs/openai-api-compatibility; reasoning models stream their
  // reasoning in `delta.reasoning` (https://docs.together.ai/docs/reasoning-models).
  together: { ...OPENAI_LIKE, title: "Together AI", baseUrl: "https://api.together.xyz/v1", apiKeyEnv: "TOGETHER_API_KEY", reasoningField: "reasoning" },

  // https://docs.fireworks.ai/tools-sdks/openai-compatibility; reasoning in `reasoning_content`
  // (https://docs.fireworks.ai/guides/reasoning).
  fireworks: { ...OPENAI_LIKE, title: "Fireworks AI", baseUrl: "https://api.fireworks.ai/inference/v1", apiKeyEnv: "FIREWORKS_API_KEY" },

  // https://api-docs.deepseek.com/api/create-chat-completion: cache hits in
  // usage.prompt_cache_hit_tokens (+ prompt_cache_miss_tokens = prompt_tokens);
  // https://api-docs.deepseek.com/guides/reasoning_model: reasoning in `reasoning_content`, and
  // "if the reasoning_content field is included in the sequence of input messages, the API will
  // return a 400 error".
  deepseek: {
    ...OPENAI_LIKE, title: "DeepSeek", baseUrl: "https://api.deepseek.com", apiKeyEnv: "DEEPSEEK_API_KEY",
    cachedTokensField: "prompt_cache_hit_tokens", dropMessageFields: ["reasoning_content"],
  },

  // https://docs.x.ai/docs/guides/reasoning: reasoning models answer `reasoning_content` and
  // refuse presencePenalty, frequencyPenalty and stop ("would result in error").
  xai: { ...OPENAI_LIKE, title: "xAI (Grok)", baseUrl: "https://api.x.ai/v1", apiKeyEnv: "XAI_API_KEY", dropParams: ["presence_penalty", "frequency_penalty", "stop"] },

  // https://openrouter.ai/docs/api-reference/overview (SSE comments ": OPENROUTER PROCESSING"
  // while waiting), https://openrouter.ai/docs/app-attribution (HTTP-Referer and X-Title name the
  // app on openrouter.ai: set your own in `headers`), reasoning in `message.reasoning`
  // (https://openrouter.ai/docs/use-cases/reasoning-tokens).
  openrouter: {
    ...OPENAI_LIKE, title: "OpenRouter", baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: "OPENROUTER_API_KEY",
    headers: { "X-Title": "reelay" }, reasoningField: "reasoning",
  },

  // https://inference-docs.cerebras.ai/resources/openai: frequency_penalty, logit_bias,
  // presence_penalty, parallel_tool_calls and service_tier "will result in a 400 error";
  // reasoning_format "parsed" answers `reasoning`.
  cerebras: {
    ...OPENAI_LIKE, title: "Cerebras", baseUrl: "https://api.cerebras.ai/v1", apiKeyEnv: "CEREBRAS_API_KEY", reasoningField: "reasoning",
    dropParams: ["frequency_penalty", "presence_penalty", "logit_bias", "parallel_tool_calls", "service_tier"],
  },

  // https://docs.perplexity.ai/api-reference/chat-completions-post: no function calling, no
  // logprobs or logit_bias; every streamed chunk carries the running usage (no stream_options).
  // Reasoning models write <think>…</think> into the content itself.
  perplexity: {
    ...OPENAI_LIKE, title: "Perplexity", baseUrl: "https://api.perplexity.ai", apiKeyEnv: "PERPLEXITY_API_KEY", streamUsage: false,
    dropParams: ["tools", "tool_choice", "parallel_tool_calls", "functions", "function_call", "logprobs", "top_logprobs", "logit_bias", "n"],
  },

  // https://github.com/ollama/ollama/blob/main/docs/openai.md: stream_options.include_usage;
  // thinking models answer `reasoning`.
  ollama: { ...LOCAL, title: "Ollama", baseUrl: "http://localhost:11434/v1", reasoningField: "reasoning" },

  // https://docs.vllm.ai/en/latest/features/reasoning_outputs.html: `reasoning` (0.10 and later;
  // earlier `reasoning_content`, which passes as it is); continuous_usage_stats for running usage.
  vllm: { ...LOCAL, title: "vLLM", baseUrl: "http://localhost:8000/v1", reasoningField: "reasoning" },

  // https://docs.sglang.ai/advanced_features/separate_reasoning.html: `reasoning_content`.
  sglang: { ...LOCAL, title: "SGLang", baseUrl: "http://localhost:30000/v1" },

  // https://github.com/ggml-org/llama.cpp/tree/master/tools/server: `reasoning_content`
  // (--reasoning-format); every stream ends with `usage` (and `timings`) on its last chunk.
  llamacpp: { ...LOCAL, title: "llama.cpp server", baseUrl: "http://localhost:8080/v1", streamUsage: false },

  // https://lmstudio.ai/docs/app/api/endpoints/openai: `reasoning_content` (the "separate
  // reasoning_content" setting), stream_options.include_usage.
  lmstudio: { ...LOCAL, title: "LM Studio", baseUrl: "http://localhost:1234/v1" },

  // https://huggingface.co/docs/text-generation-inference/messages_api: OpenAI's chat API as it
  // is (the model name is not checked), stream_options.include_usage.
  tgi: { ...LOCAL, title: "Hugging Face TGI", baseUrl: "http://localhost:8080/v1" },
} satisfies Record<string, Preset>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

/** What a model of no named provider gets: OpenAI's behaviour, no default URL or key. */
export const NO_PRESET: Preset = { ...OPENAI_LIKE, title: "any OpenAI-compatible server" };

export function presetOf(name: string | undefined): Preset {
  return name === undefined ? NO_PRESET : (PRESETS as Record<string, Preset>)[name]!;
}
