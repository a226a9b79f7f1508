/** Per-model options of the gemini plugin, as a schema the host validates at boot. */
import {
  DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, deploymentProblems, EnvVarName, RoutingOptions, Type, UpstreamTimeoutOptions, type Static,
} from "@reelay/plugin-sdk";

export const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";
/** the variable read for the key when a model or deployment names none */
export const DEFAULT_KEY_ENV = "GEMINI_API_KEY";

const BaseUrl = Type.String({ pattern: "^https?://[^?#]+$", description: 'the API origin, without /v1beta, e.g. "https://generativelanguage.googleapis.com"' });

export const Deployment = Type.Object({
  name: Type.Optional(DeploymentName),
  baseUrl: BaseUrl,
  /** this deployment's key (default GEMINI_API_KEY); unset at boot → the boot stops */
  apiKeyEnv: Type.Optional(EnvVarName),
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  weight: DeploymentWeight,
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

const Budget = (fallback: number) => Type.Integer({ minimum: 0, maximum: 32_768, default: fallback });

export const GeminiOptions = Type.Object({
  /** one upstream (default https://generativelanguage.googleapis.com), or `deployments` */
  baseUrl: Type.Optional(BaseUrl),
  /** the variable holding the API key, sent as x-goog-api-key (default GEMINI_API_KEY) */
  apiKeyEnv: Type.Optional(EnvVarName),
  deployments: Type.Optional(Type.Array(Deployment, { minItems: 1, maxItems: 64 })),
  routing: RoutingOptions,
  /** Google's model name ("gemini-2.5-flash"); default: the model's id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  /** the API version in the path */
  apiVersion: Type.String({ pattern: "^v[0-9a-z]+$", default: "v1beta" }),
  capabilities: Type.Array(Type.Union([Type.Literal("chat"), Type.Literal("embeddings")]), { minItems: 1, uniqueItems: true, default: ["chat"] }),
  /**
   * how reasoning_effort is sent: `budget` (Gemini 2.5: thinkingBudget in tokens, from
   * reasoningBudgets) or `level` (Gemini 3: thinkingLevel "low" / "high", the effort as given)
   */
  thinking: Type.Union([Type.Literal("budget"), Type.Literal("level")], { default: "budget" }),
  /** reasoning_effort → thinkingBudget; "none" is 0 (no thinking, where the model allows it) */
  reasoningBudgets: Type.Object({ minimal: Budget(512), low: Budget(1024), medium: Budget(8192), high: Budget(24_576) }, { additionalProperties: false, default: {} }),
  /** ask for thought summaries (thinkingConfig.includeThoughts): they reach clients as reasoning_content */
  includeThoughts: Type.Boolean({ default: true }),
  /** sent as the request's safetySettings (Gemini's categories and thresholds) */
  safetySettings: Type.Optional(Type.Array(Type.Object({ category: Type.String({ pattern: "^HARM_CATEGORY_[A-Z_]+$" }), threshold: Type.String({ pattern: "^[A-Z_]+$" }) }, { additionalProperties: false }), { maxItems: 16 })),
  /** embeddings: the taskType sent (RETRIEVAL_DOCUMENT, SEMANTIC_SIMILARITY …) */
  embeddingTaskType: Type.Optional(Type.String({ pattern: "^[A-Z_]+$" })),
  /**
   * images given by URL are downloaded by reelay (Gemini takes only inline data or its own file
   * URIs) through its SSRF guard: at most maxBytes, within timeoutMs; private addresses only with
   * allowPrivateNetwork
   */
  imageUrls: Type.Object({
    maxBytes: Type.Integer({ minimum: 1024, maximum: 100 * 1024 * 1024, default: 20 * 1024 * 1024 }),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    allowPrivateNetwork: Type.Boolean({ default: false }),
  }, { additionalProperties: false, default: {} }),
  timeouts: UpstreamTimeoutOptions,
  limits: Type.Object({
    maxResponseBytes: Type.Integer({ minimum: 1024, default: 16 * 1024 * 1024 }),
    maxEventBytes: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false });

export type GeminiOptions = Static<typeof GeminiOptions>;

/** `baseUrl` (default Google's) or `deployments`, not both; every URL parses; names unique. */
export function validateOptions(o: GeminiOptions): string[] {
  return deploymentProblems(o, false);
}
