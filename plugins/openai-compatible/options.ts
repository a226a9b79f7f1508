/** Per-model options of the openai-compatible plugin, as a schema the host validates at boot. */
import { DEFAULT_UPSTREAM_TIMEOUTS, DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, EnvVarName, RoutingOptions, Type, type Static } from "@reelay/plugin-sdk";

const ms = (description: string, fallback: number) => Type.Integer({ minimum: 1, maximum: 86_400_000, default: fallback, description });

export const Timeouts = Type.Object({
  /**
   * Streamed calls: request start → response headers. Covers DNS, TCP, TLS and the upstream
   * accepting the request (vLLM, OpenAI and llama.cpp send stream headers before generating).
   * Servers that hold the headers until the first token (Ollama under load) need a larger value.
   */
  connectMs: ms("streamed calls: request start to response headers", DEFAULT_UPSTREAM_TIMEOUTS.connectMs),
  /** Streamed calls: response headers → first body byte (queueing + prefill, i.e. time to first token). */
  firstByteMs: ms("streamed calls: headers to the first body byte", DEFAULT_UPSTREAM_TIMEOUTS.firstByteMs),
  /** Gap between two body chunks, both calls. */
  idleMs: ms("gap between two body chunks", DEFAULT_UPSTREAM_TIMEOUTS.idleMs),
  /** The whole call, body included (a non-streamed upstream sends headers only when done). */
  totalMs: ms("the whole call", DEFAULT_UPSTREAM_TIMEOUTS.totalMs),
}, { additionalProperties: false, default: {} });

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
  const problems: string[] = [];
  if (o.deployments === undefined && o.baseUrl === undefined) return ['option "baseUrl": is required (or "deployments", a list of upstreams)'];
  if (o.deployments !== undefined && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined)) {
    problems.push('option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both');
  }
  const urls = o.deployments ? o.deployments.map((d, i) => [`deployments.${i}.baseUrl`, d.baseUrl] as const) : [["baseUrl", o.baseUrl!] as const];
  for (const [option, url] of urls) {
    try {
      new URL(url);
    } catch {
      problems.push(`option "${option}": not a valid URL: ${url}`);
    }
  }
  if (o.deployments && problems.length === 0) {
    const names = deploymentNames(o.deployments);
    const seen = new Set<string>();
    for (const [i, n] of names.entries()) {
      if (seen.has(n)) problems.push(`option "deployments.${i}.name": "${n}" names two deployments (give each a unique name)`);
      seen.add(n);
    }
  }
  return problems;
}

/** Each deployment's name: its own, else its base URL's host:port (a second with the same host gets "#2" …). */
export function deploymentNames(list: Array<Pick<DeploymentOptions, "name" | "baseUrl">>): string[] {
  const used = new Map<string, number>();
  return list.map((d) => {
    if (d.name) return d.name;
    const host = new URL(d.baseUrl).host;
    const n = (used.get(host) ?? 0) + 1;
    used.set(host, n);
    return n === 1 ? host : `${host}#${n}`;
  });
}
