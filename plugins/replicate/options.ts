/** Per-model options of the replicate plugin: a schema the host validates at boot, plus what it cannot express. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, EnvVarName, problemsWithMapping, RoutingOptions, Type, type InputMapping, type InputSource, type Static } from "@reelay/plugin-sdk";

export const REPLICATE_API = "https://api.replicate.com";

/** reelay's request → a Replicate model's input, unless the model's inputMapping says otherwise (most video models take these names) */
export const REPLICATE_INPUT: Record<InputSource, string | null> = {
  prompt: "prompt",
  negative_prompt: "negative_prompt",
  image: "image:dataUrl",
  seconds: "duration",
  size: null,
  seed: "seed",
  steps: null,
  job_id: null,
};

/** hosted video models take an aspect ratio and a length more than an exact size: accept the usual ones, let each model's entry narrow them */
export const HOSTED_SIZES = ["480x832", "832x480", "624x624", "720x1280", "1280x720", "1024x1792", "1792x1024"];
export const HOSTED_SECONDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

const BaseUrl = Type.String({ pattern: "^https?://[^?#@]+$", description: `the API, default ${REPLICATE_API} (http or https, no query or credentials)` });

export const ReplicateDeployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams; the first part of each job's handle and its webhook URL's token */
  name: Type.Optional(DeploymentName),
  baseUrl: Type.Optional(BaseUrl),
  /** this account's API token (REPLICATE_API_TOKEN) */
  apiKeyEnv: EnvVarName,
  /** this account's webhook signing secret (whsec_…); default: read once from GET /v1/webhooks/default/secret */
  webhookSecretEnv: Type.Optional(EnvVarName),
  weight: DeploymentWeight,
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

export const ReplicateOptions = Type.Object({
  /** an official model, "owner/name": POST /v1/models/{owner}/{name}/predictions */
  model: Type.Optional(Type.String({ pattern: "^[\\w.-]+/[\\w.-]+$", description: 'e.g. "kwaivgi/kling-v2.1"' })),
  /** or a model version: POST /v1/predictions {version} (a version id, or "owner/name:version") */
  version: Type.Optional(Type.String({ pattern: "^([\\w.-]+/[\\w.-]+:)?[0-9a-f]{64}$", description: "a 64-hex version id, optionally prefixed owner/name:" })),
  baseUrl: Type.Optional(BaseUrl),
  apiKeyEnv: Type.Optional(EnvVarName),
  webhookSecretEnv: Type.Optional(EnvVarName),
  /** several accounts (or proxies) serving the model: a job goes to one and is followed there */
  deployments: Type.Optional(Type.Array(ReplicateDeployment, { minItems: 1, maxItems: 64 })),
  routing: RoutingOptions,
  /** reelay's request fields → the model's input fields (the SDK's input mapping; defaults: REPLICATE_INPUT) */
  inputMapping: Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), { default: {} }),
  /** constant input fields (mapped fields win on a clash), e.g. {"mode": "standard"} */
  staticInput: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
  /** ask Replicate to call back when a prediction ends (needs REELAY_PUBLIC_URL); false: poll only */
  webhooks: Type.Boolean({ default: true }),
  /** polling without webhooks: a 30 s – 5 min job polled every 2 s adds ≤ 2 s */
  pollIntervalMs: Type.Integer({ minimum: 50, maximum: 600_000, default: 2_000 }),
  /** polling with webhooks on: only a safety net for a lost callback */
  webhookPollIntervalMs: Type.Integer({ minimum: 50, maximum: 3_600_000, default: 30_000 }),
  /** the sizes the model renders (the models file may narrow them): the first API's three and OpenAI's four */
  sizes: Type.Array(Type.String({ pattern: "^[1-9][0-9]{1,3}x[1-9][0-9]{1,3}$", description: '"WIDTHxHEIGHT", even numbers' }), { minItems: 1, maxItems: 64, default: HOSTED_SIZES }),
  /** the clip lengths it renders (the models file may narrow them, e.g. Kling: [5, 10]) */
  seconds: Type.Array(Type.Integer({ minimum: 1, maximum: 3600 }), { minItems: 1, maxItems: 600, default: HOSTED_SECONDS }),
  maxConcurrency: Type.Integer({ minimum: 1, maximum: 10_000, default: 16 }),
  timeouts: Type.Object({
    requestMs: Type.Integer({ minimum: 1, maximum: 600_000, default: 30_000 }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false });

export type ReplicateOptions = Static<typeof ReplicateOptions> & { inputMapping: InputMapping };

export function validateOptions(o: Static<typeof ReplicateOptions>): string[] {
  const problems = problemsWithMapping(o.inputMapping ?? {}).map((p) => `option "inputMapping.${p}`);
  if ((o.model === undefined) === (o.version === undefined)) problems.push('option "model": give either "model" ("owner/name") or "version", exactly one');
  if (o.deployments !== undefined && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined || o.webhookSecretEnv !== undefined)) {
    problems.push('option "deployments": give either "baseUrl" / "apiKeyEnv" / "webhookSecretEnv" or "deployments", not both');
  }
  if (o.deployments === undefined && o.apiKeyEnv === undefined) problems.push('option "apiKeyEnv": is required (the environment variable holding the API token, e.g. REPLICATE_API_TOKEN)');
  if (o.deployments) {
    const names = deploymentNames(o.deployments);
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) problems.push(`option "deployments.${i}.name": "${n}" names two deployments (give each a unique name)`);
    });
  }
  if (Array.isArray(o.staticInput)) problems.push('option "staticInput" must be an object of constant input fields, not a list');
  return problems;
}

/** Each deployment's name: its own, else its API's host:port (a second with the same host gets "#2" …). */
export function deploymentNames(list: Array<{ name?: string; baseUrl?: string }>): string[] {
  const used = new Map<string, number>();
  return list.map((d) => {
    if (d.name) return d.name;
    let host = d.baseUrl ?? REPLICATE_API;
    try {
      host = new URL(host).host;
    } catch { /* the schema's pattern already judged it */ }
    const n = (used.get(host) ?? 0) + 1;
    used.set(host, n);
    return n === 1 ? host : `${host}#${n}`;
  });
}
