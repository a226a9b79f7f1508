/** Per-model options of the openai-compatible plugin, as a schema the host validates at boot. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, deploymentProblems, EnvVarName, RoutingOptions, Type, UpstreamTimeoutOptions, type Static } from "@reelay/plugin-sdk";
import { PRESET_NAMES, presetOf } from "./presets.ts";

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
/** a preset's name (presets.ts); checked against the list in validateOptions, which names them all */
const Provider = Type.String({ pattern: "^[a-z0-9-]{1,40}$", description: "a preset: openai, azure-openai, groq, … (docs/providers/presets.md)" });
/** Azure's api-version: with it, deployment-style URLs (/openai/deployments/<model>/…?api-version=) */
const ApiVersion = Type.String({ pattern: "^[A-Za-z0-9._-]{1,40}$" });
const ParamName = Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]{0,63}$" });
const HeaderName = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$";
/** extra request headers, merged over the preset's (OpenRouter's HTTP-Referer / X-Title) */
const Headers = Type.Record(Type.String({ pattern: HeaderName }), Type.String({ maxLength: 1000, pattern: "^[^\\r\\n]*$" }), { additionalProperties: false });

/**
 * What the provider does differently, each overriding its preset's value (presets.ts explains
 * each); a model of no preset starts from OpenAI's behaviour.
 */
const QuirkOptions = {
  auth: Type.Optional(Type.Union([Type.Literal("bearer"), Type.Literal("api-key"), Type.Literal("none")])),
  headers: Type.Optional(Headers),
  dropParams: Type.Optional(Type.Array(ParamName, { maxItems: 64, uniqueItems: true })),
  renameParams: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]{0,63}$" }), ParamName, { additionalProperties: false })),
  dropMessageFields: Type.Optional(Type.Array(ParamName, { maxItems: 64, uniqueItems: true })),
  streamUsage: Type.Optional(Type.Boolean()),
  reasoningField: Type.Optional(Type.Union([Type.Literal("reasoning_content"), Type.Literal("reasoning")])),
  cachedTokensField: Type.Optional(Type.Union([Type.Literal("prompt_tokens_details.cached_tokens"), Type.Literal("prompt_cache_hit_tokens")])),
};

/** One upstream serving the model (a vLLM replica, a provider, a region). */
export const Deployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams; default: the base URL's host:port */
  name: Type.Optional(DeploymentName),
  /** this deployment's provider preset (default: the model's `provider`) */
  provider: Type.Optional(Provider),
  /** default: its preset's base URL */
  baseUrl: Type.Optional(BaseUrl),
  /** this deployment's key (default: its preset's variable); a deployment without one sends none. Unset at boot → the boot stops. */
  apiKeyEnv: Type.Optional(EnvVarName),
  apiVersion: Type.Optional(ApiVersion),
  /** merged over the model's and the preset's */
  headers: Type.Optional(Headers),
  /** the model's name on this deployment; default: the model's upstreamModel, else its id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  /** relative share of the traffic */
  weight: DeploymentWeight,
  /** requests in flight at once on one reelay instance; at it, the deployment is skipped */
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

export const OpenAICompatibleOptions = Type.Object({
  /** a provider preset (presets.ts): its base URL, auth and quirks, each overridable below */
  provider: Type.Optional(Provider),
  /** one upstream: includes the /v1 part, like the OpenAI SDK's baseURL (or `deployments` for several); default: the preset's */
  baseUrl: Type.Optional(BaseUrl),
  /** Azure OpenAI's api-version: deployment-style URLs instead of /openai/v1 */
  apiVersion: Type.Optional(ApiVersion),
  ...QuirkOptions,
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

/**
 * What the schema cannot say: known providers; `baseUrl` (or the preset's) or `deployments` (one
 * of them), every URL parses, names are unique; a key only where the auth scheme sends one; an
 * `apiVersion` only for a provider with versioned URLs.
 */
export function validateOptions(o: OpenAICompatibleOptions): string[] {
  const problems: string[] = [];
  const known = (name: string | undefined, option: string) => {
    if (name === undefined || (PRESET_NAMES as string[]).includes(name)) return true;
    problems.push(`option "${option}": unknown provider "${name}" (one of ${PRESET_NAMES.join(", ")})`);
    return false;
  };
  const scheme = (provider: string | undefined, apiKeyEnv: string | undefined, apiVersion: string | undefined, at: string) => {
    const preset = presetOf(provider);
    if (apiKeyEnv !== undefined && (o.auth ?? preset.auth) === "none") problems.push(`option "${at}apiKeyEnv": ${provider ?? "this upstream"} is called without a key (auth "none"); set auth: bearer (or api-key) to send one`);
    if (apiVersion !== undefined && !preset.versioned) problems.push(`option "${at}apiVersion": ${provider ?? "this upstream"} has no versioned URLs (only azure-openai takes apiVersion)`);
  };
  if (!known(o.provider, "provider")) return problems;
  if (o.deployments === undefined) {
    scheme(o.provider, o.apiKeyEnv, o.apiVersion, "");
    const baseUrl = o.baseUrl ?? presetOf(o.provider).baseUrl;
    if (baseUrl === undefined && o.provider !== undefined) return [...problems, `option "baseUrl": is required for provider ${o.provider} (its resource URL)`];
    return [...problems, ...deploymentProblems({ baseUrl, apiKeyEnv: o.apiKeyEnv })];
  }
  const deployments = o.deployments.map((d, i) => {
    const provider = d.provider ?? o.provider;
    if (!known(d.provider, `deployments.${i}.provider`)) return { ...d, baseUrl: "http://invalid" };
    scheme(provider, d.apiKeyEnv, d.apiVersion ?? o.apiVersion, `deployments.${i}.`);
    const baseUrl = d.baseUrl ?? presetOf(provider).baseUrl;
    if (baseUrl === undefined) problems.push(`option "deployments.${i}.baseUrl": is required${provider ? ` for provider ${provider}` : ""}`);
    return { ...d, baseUrl: baseUrl ?? "http://invalid" };
  });
  if (problems.length) return problems;
  return deploymentProblems({ ...o, deployments });
}
