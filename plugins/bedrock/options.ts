/** Per-model options of the bedrock plugin, as a schema the host validates at boot. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, EnvVarName, RoutingOptions, Type, UpstreamTimeoutOptions, type Static } from "@reelay/plugin-sdk";

const BaseUrl = Type.String({ pattern: "^https?://[^?#]+$", description: "the Bedrock runtime endpoint (the AWS SDK's `endpoint`): a VPC endpoint, a proxy; default the region's" });
const Region = Type.String({ pattern: "^[a-z]{2}(-gov)?-[a-z]+-\\d$", description: 'an AWS region, e.g. "us-east-1"' });

export const Deployment = Type.Object({
  name: Type.Optional(DeploymentName),
  /** this deployment's region (default: the model's `region`, else AWS_REGION) */
  region: Type.Optional(Region),
  baseUrl: Type.Optional(BaseUrl),
  /** a Bedrock API key (Bearer) instead of SigV4 credentials; unset at boot → the boot stops */
  apiKeyEnv: Type.Optional(EnvVarName),
  /** the model id or inference profile on this deployment ("eu.anthropic.claude-…") */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  weight: DeploymentWeight,
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

const Budget = (fallback: number) => Type.Integer({ minimum: 1024, maximum: 1_000_000, default: fallback });

export const BedrockOptions = Type.Object({
  /** the region (default AWS_REGION / AWS_DEFAULT_REGION); credentials come from the standard AWS chain */
  region: Type.Optional(Region),
  /** override the region's endpoint (the AWS SDK's `endpoint`) */
  baseUrl: Type.Optional(BaseUrl),
  /** a Bedrock API key, sent as a Bearer token, instead of SigV4 credentials */
  apiKeyEnv: Type.Optional(EnvVarName),
  deployments: Type.Optional(Type.Array(Deployment, { minItems: 1, maxItems: 64 })),
  routing: RoutingOptions,
  /** the Bedrock model id or inference profile ("anthropic.claude-sonnet-4-5-20250929-v1:0", "us.amazon.nova-pro-v1:0"); default: the model's id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * reasoning_effort → `additionalModelRequestFields.thinking` with a budget: "claude" (Anthropic's
   * models on Bedrock take it), or "off" (left out: most other models refuse the field)
   */
  thinking: Type.Union([Type.Literal("claude"), Type.Literal("off")], { default: "off" }),
  reasoningBudgets: Type.Object({ low: Budget(1024), medium: Budget(2048), high: Budget(4096), xhigh: Budget(16_384) }, { additionalProperties: false, default: {} }),
  /** put a cache point after the system prompt and the tools (Claude and Nova cache that prefix; cache reads billed at cachedInputPerMillion) */
  cachePrompt: Type.Boolean({ default: false }),
  /** fields the model takes beyond Converse's (Bedrock's additionalModelRequestFields), sent on every request */
  additionalModelRequestFields: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  /** a throttled request's wait when Bedrock gives none: the client's Retry-After, the deployment's breaker wait */
  throttleRetryAfterSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 1 }),
  imageUrls: Type.Object({
    maxBytes: Type.Integer({ minimum: 1024, maximum: 100 * 1024 * 1024, default: 3_750_000 }),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    allowPrivateNetwork: Type.Boolean({ default: false }),
  }, { additionalProperties: false, default: {} }),
  timeouts: UpstreamTimeoutOptions,
}, { additionalProperties: false });

export type BedrockOptions = Static<typeof BedrockOptions>;

/** `baseUrl` / `region` / `apiKeyEnv` for one upstream, or `deployments`, not both; every URL parses; names unique. */
export function validateOptions(o: BedrockOptions): string[] {
  const problems: string[] = [];
  if (o.deployments && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined)) problems.push('option "deployments": give either "baseUrl" / "apiKeyEnv" or "deployments", not both (a model-level "region" is every deployment\'s default)');
  const urls = o.deployments ? o.deployments.map((d, i) => [`deployments.${i}.baseUrl`, d.baseUrl] as const) : [["baseUrl", o.baseUrl] as const];
  for (const [option, url] of urls) {
    if (url === undefined) continue;
    try {
      new URL(url);
    } catch {
      problems.push(`option "${option}": not a valid URL: ${url}`);
    }
  }
  const names = new Set<string>();
  for (const [i, d] of (o.deployments ?? []).entries()) {
    const name = deploymentName(d, i);
    if (names.has(name)) problems.push(`option "deployments.${i}.name": "${name}" names two deployments (give each a unique name)`);
    names.add(name);
  }
  return problems;
}

/** A deployment's name: its own, else its endpoint's host, else its region, else its place in the list. */
export function deploymentName(d: { name?: string; baseUrl?: string; region?: string }, i: number): string {
  return d.name ?? (d.baseUrl ? new URL(d.baseUrl).host : d.region ?? `deployment-${i}`);
}
