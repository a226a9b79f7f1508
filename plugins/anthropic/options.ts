/** Per-model options of the anthropic plugin, as a schema the host validates at boot. */
import {
  DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, deploymentProblems, EnvVarName, RoutingOptions, Type, UpstreamTimeoutOptions, type Static,
} from "@reelay/plugin-sdk";

export const DEFAULT_BASE_URL = "https://api.anthropic.com";

const BaseUrl = Type.String({ pattern: "^https?://[^?#]+$", description: 'the API origin, without /v1, e.g. "https://api.anthropic.com" (http or https, no query)' });

/** One upstream serving the model (Anthropic's API, a regional gateway, a proxy in front of it). */
export const Deployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams; default: the base URL's host:port */
  name: Type.Optional(DeploymentName),
  baseUrl: BaseUrl,
  /** this deployment's key; unset at boot → the boot stops */
  apiKeyEnv: Type.Optional(EnvVarName),
  /** the model's name on this deployment; default: the model's upstreamModel, else its id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  weight: DeploymentWeight,
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

const Budget = (fallback: number) => Type.Integer({ minimum: 1024, maximum: 1_000_000, default: fallback });

export const AnthropicOptions = Type.Object({
  /** one upstream (default https://api.anthropic.com), or `deployments` for several */
  baseUrl: Type.Optional(BaseUrl),
  /** the environment variable holding the API key (sent as x-api-key), never the key itself */
  apiKeyEnv: Type.Optional(EnvVarName),
  deployments: Type.Optional(Type.Array(Deployment, { minItems: 1, maxItems: 64 })),
  /** retries over deployments and their circuit breakers (the SDK's RoutingOptions) */
  routing: RoutingOptions,
  /** the model name Anthropic knows ("claude-sonnet-4-5"); default: the model's id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  /** the anthropic-version header sent (a native /v1/messages call sends the client's own when it has one) */
  anthropicVersion: Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", default: "2023-06-01" }),
  /** anthropic-beta values sent on every call (a native call adds the client's) */
  betas: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z0-9._-]{1,100}$" }), { maxItems: 32, uniqueItems: true })),
  /**
   * max_tokens for a chat request that gives none (Anthropic requires one) when the model has no
   * maxOutputTokens; the host holds credit for 4,096 output tokens in that case too
   */
  defaultMaxTokens: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 4096 }),
  /**
   * a chat request's `reasoning_effort` as Anthropic's thinking budget (tokens; Anthropic's minimum
   * is 1,024, and the budget must stay below max_tokens: it is cut to max_tokens − 1, and thinking
   * is left off when that is under 1,024). "none" / "minimal" leave thinking off.
   */
  reasoningBudgets: Type.Object({ low: Budget(1024), medium: Budget(2048), high: Budget(4096), xhigh: Budget(16_384) }, { additionalProperties: false, default: {} }),
  timeouts: UpstreamTimeoutOptions,
  /**
   * maxResponseBytes: the largest non-streamed answer read (default 16 MiB: far beyond 128k tokens
   * of text); maxEventBytes: the largest streamed event (default 1 MiB; a delta is under 1 KB, a
   * redacted_thinking block can be tens of KB)
   */
  limits: Type.Object({
    maxResponseBytes: Type.Integer({ minimum: 1024, default: 16 * 1024 * 1024 }),
    maxEventBytes: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false });

export type AnthropicOptions = Static<typeof AnthropicOptions>;

/** `baseUrl` (default Anthropic's) or `deployments`, not both; every URL parses; names unique. */
export function validateOptions(o: AnthropicOptions): string[] {
  return deploymentProblems(o, false);
}
