/** Per-model options of the openai-videos plugin: a schema the host validates at boot, plus what it cannot express. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, EnvVarName, RoutingOptions, Type, type Static } from "@reelay/plugin-sdk";

const BaseUrl = Type.String({ pattern: "^https?://[^?#@]+$", description: 'the API root /videos is appended to, e.g. "https://api.openai.com/v1" (http or https, no query or credentials)' });
const UpstreamModel = Type.String({ minLength: 1, maxLength: 200, description: 'the upstream\'s model name, e.g. "sora-2"' });

export const VideosDeployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams; the first part of each job's handle */
  name: Type.Optional(DeploymentName),
  baseUrl: BaseUrl,
  apiKeyEnv: Type.Optional(EnvVarName),
  /** this upstream's name for the model (default: the model's upstreamModel) */
  upstreamModel: Type.Optional(UpstreamModel),
  weight: DeploymentWeight,
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

export const OpenAIVideosOptions = Type.Object({
  baseUrl: Type.Optional(BaseUrl),
  apiKeyEnv: Type.Optional(EnvVarName),
  /** the model's name upstream (default: reelay's model id) */
  upstreamModel: Type.Optional(UpstreamModel),
  /** several upstreams (vendors, gateways, regions) serving the model: a job goes to one and is followed there */
  deployments: Type.Optional(Type.Array(VideosDeployment, { minItems: 1, maxItems: 64 })),
  routing: RoutingOptions,
  /** a 1–5 min job polled every 2 s adds ≤ 2 s (OpenAI's own poller waits openai-poll-after-ms, ~1–2 s) */
  pollIntervalMs: Type.Integer({ minimum: 50, maximum: 600_000, default: 2_000 }),
  /** the sizes the upstream model renders (the models file may narrow them); default OpenAI's (sora-2) */
  sizes: Type.Array(Type.String({ pattern: "^[1-9][0-9]{1,3}x[1-9][0-9]{1,3}$", description: '"WIDTHxHEIGHT", even numbers' }), { minItems: 1, maxItems: 64, default: ["720x1280", "1280x720", "1024x1792", "1792x1024"] }),
  /** the clip lengths it renders, sent as strings; default OpenAI's */
  seconds: Type.Array(Type.Integer({ minimum: 1, maximum: 3600 }), { minItems: 1, maxItems: 600, default: [4, 8, 12] }),
  maxConcurrency: Type.Integer({ minimum: 1, maximum: 10_000, default: 16 }),
  timeouts: Type.Object({
    /** one create (with the image upload), status or delete call */
    requestMs: Type.Integer({ minimum: 1, maximum: 600_000, default: 60_000 }),
    /** downloading the finished video from /videos/{id}/content */
    downloadMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 120_000 }),
  }, { additionalProperties: false, default: {} }),
  /** largest video accepted from /content */
  maxOutputBytes: Type.Integer({ minimum: 1024, maximum: 2 ** 31, default: 256 * 1024 * 1024 }),
}, { additionalProperties: false });

export type OpenAIVideosOptions = Static<typeof OpenAIVideosOptions>;

export function validateOptions(o: OpenAIVideosOptions): string[] {
  const problems: string[] = [];
  if (o.baseUrl === undefined && o.deployments === undefined) problems.push('option "baseUrl": is required (or "deployments", a list of upstreams)');
  if (o.deployments !== undefined && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined)) problems.push('option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both');
  if (o.deployments) {
    const names = deploymentNames(o.deployments);
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) problems.push(`option "deployments.${i}.name": "${n}" names two deployments (give each a unique name)`);
    });
  }
  return problems;
}

/** Each upstream's name: its own, else its URL's host:port (a second with the same host gets "#2" …). */
export function deploymentNames(list: Array<{ name?: string; baseUrl: string }>): string[] {
  const used = new Map<string, number>();
  return list.map((d) => {
    if (d.name) return d.name;
    let host = d.baseUrl;
    try {
      host = new URL(d.baseUrl).host;
    } catch { /* the schema's pattern already judged it */ }
    const n = (used.get(host) ?? 0) + 1;
    used.set(host, n);
    return n === 1 ? host : `${host}#${n}`;
  });
}
