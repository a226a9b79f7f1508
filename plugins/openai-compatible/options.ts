/** Per-model options of the openai-compatible plugin, as a schema the host validates at boot. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, deploymentProblems, EnvVarName, RoutingOptions, Type, UpstreamTimeoutOptions, type Static } from "@reelay/plugin-sdk";

/** callUpstream's four deadlines as a model option (the SDK's schema, shared by every routing plugin). */
export const Timeouts = UpstreamTimeoutOptions;

/**
 * maxResponseBytes: the largest non-streamed answer read; beyond it the call fails (502) and the
 * hold is released (a 200 MB upstream answer raised reelay's RSS by 389 MiB before this cap
 * existed). Default 16 MiB for chat (128 choices × 32k tokens of text is ~16 MB) and 128 MiB for
 * embeddings (2,048 inputs × 3,072 dimensions as JSON floats is ~125 MB). maxEventBytes: the
 * largest single streamed event (default 1 MiB; a chat chunk is well under 10 KB).
 */
export const Limits = Type.Object({
  maxResponseBytes: Type.Optional(Type.Integer({ minimum: 1024 })),
  maxEventBytes: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
}, { additionalProperties: false, default: {} });

const BaseUrl = Type.String({ pattern: "^https?://[^?#]+$", description: 'the upstream, e.g. "http://localhost:8000/v1" (http or https, no query)' });

/** One upstream serving the model (a vLLM replica, a provider, a region). */
export const Deployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams; default: the base URL's host:port */
  name: Type.Optional(DeploymentName),
  baseUrl: BaseUrl,
  /** this deployment's key; a deployment without one sends none. Unset at boot → the boot stops. */
  apiKeyEnv: Type.Optional(EnvVarName),
  /** the model's name on this deployment; default: the model's upstreamModel, else its id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  /** relative share of the traffic */
  weight: DeploymentWeight,
  /** requests in flight at once on one reelay instance; at it, the deployment is skipped */
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

export const OpenAICompatibleOptions = Type.Object({
  /** one upstream: includes the /v1 part, like the OpenAI SDK's baseURL (or `deployments` for several) */
  baseUrl: Type.Optional(BaseUrl),
  /** the name of the environment variable holding the API key, never the key itself */
  apiKeyEnv: Type.Optional(EnvVarName),
  /** several upstreams serving this model, instead of `baseUrl` / `apiKeyEnv` */
  deployments: Type.Optional(Type.Array(Deployment, { minItems: 1, maxItems: 64 })),
  /** retries over deployments and their circuit breakers (the SDK's RoutingOptions) */
  routing: RoutingOptions,
  /** the model name the upstream knows; default: the model's id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  timeouts: Timeouts,
  /** ask for vLLM's per-chunk usage, so an abandoned stream is billed in the model's own tokens */
  continuousUsageStats: Type.Boolean({ default: false }),
  capabilities: Type.Array(Type.Union([Type.Literal("chat"), Type.Literal("embeddings")]), { minItems: 1, uniqueItems: true, default: ["chat"] }),
  limits: Limits,
}, { additionalProperties: false });

export type OpenAICompatibleOptions = Static<typeof OpenAICompatibleOptions>;
export type Timeouts = Static<typeof Timeouts>;
export type DeploymentOptions = Static<typeof Deployment>;

export const DEFAULT_MAX_RESPONSE_BYTES = { chat: 16 * 1024 * 1024, embeddings: 128 * 1024 * 1024 } as const;

/** What the schema cannot say: `baseUrl` or `deployments` (one of them), every URL parses, names are unique. */
export function validateOptions(o: OpenAICompatibleOptions): string[] {
  return deploymentProblems(o);
}
