/** Per-model options of the comfyui plugin: a schema the host validates at boot, plus the workflow file's own checks. */
import { DeploymentMaxConcurrent, DeploymentName, DeploymentWeight, EnvVarName, RoutingOptions, Type, type Static } from "@reelay/plugin-sdk";
import { framesProblem } from "./frames.ts";
import { readWorkflow } from "./workflow.ts";

/** what Wan 2.x and LTX-Video workflows render well: the first API's three sizes and 720p both ways */
export const COMFY_SIZES = ["480x832", "832x480", "624x624", "720x1280", "1280x720"];

const BaseUrl = Type.String({ pattern: "^https?://[^?#@]+$", description: 'the ComfyUI server, e.g. "http://gpu-box:8188" (http or https, no query or credentials)' });

export const ComfyDeployment = Type.Object({
  /** shown in /metrics, logs and GET /admin/upstreams, and the first part of each job's handle; default: the URL's host:port */
  name: Type.Optional(DeploymentName),
  baseUrl: BaseUrl,
  /** a key for a ComfyUI behind an authenticating proxy, sent as `Authorization: Bearer …` */
  apiKeyEnv: Type.Optional(EnvVarName),
  weight: DeploymentWeight,
  /** jobs this reelay instance keeps on this server at once (a GPU runs one prompt at a time; the rest wait in its queue) */
  maxConcurrent: Type.Optional(DeploymentMaxConcurrent),
}, { additionalProperties: false });

/** A table of seconds → frames, e.g. {"5": 81, "10": 161}: the only lengths the model makes. */
const FramesTable = Type.Record(Type.String({ pattern: "^[1-9][0-9]{0,2}$" }), Type.Integer({ minimum: 1, maximum: 10_000 }));

export const ComfyOptions = Type.Object({
  baseUrl: Type.Optional(BaseUrl),
  apiKeyEnv: Type.Optional(EnvVarName),
  /** several ComfyUI servers with the same models and custom nodes: a job goes to one and is followed there */
  deployments: Type.Optional(Type.Array(ComfyDeployment, { minItems: 1, maxItems: 64 })),
  routing: RoutingOptions,
  /** an API-format workflow (ComfyUI: Workflow → Export (API)) with {{placeholders}}; absolute, or relative to reelay's working directory */
  workflowFile: Type.String({ minLength: 1 }),
  /** frames per second the workflow renders at ({{fps}}) */
  fps: Type.Integer({ minimum: 1, maximum: 120, default: 16 }),
  /** how seconds become frames ({{frames}}): a formula of `seconds`, `fps`, integers, + - * and parentheses, or a table */
  framesFor: Type.Union([Type.String({ minLength: 1, maxLength: 100 }), FramesTable], { default: "seconds * fps + 1" }),
  /** the sizes the workflow renders (the models file may narrow them); default: COMFY_SIZES */
  sizes: Type.Optional(Type.Array(Type.String({ pattern: "^[1-9][0-9]{1,3}x[1-9][0-9]{1,3}$", description: '"WIDTHxHEIGHT", even numbers' }), { minItems: 1, maxItems: 64 })),
  /** the clip lengths it renders; default: a framesFor table's lengths, else 1–10 */
  seconds: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: 3600 }), { minItems: 1, maxItems: 600 })),
  /** the node whose output is the video; default: the first node that outputs an .mp4 */
  outputNode: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9_:.-]{1,64}$" })),
  /** {{steps}} when the client gave none */
  steps: Type.Integer({ minimum: 1, maximum: 1_000, default: 20 }),
  /** {{negative_prompt}} when the client gave none */
  negativePrompt: Type.String({ default: "", maxLength: 10_000 }),
  /** follow jobs on ComfyUI's websocket (progress and completion pushed at once); false: poll /history and /queue only */
  websocket: Type.Boolean({ default: true }),
  /**
   * Defaults. 2 s: with the websocket a poll reads memory (the push wakes the job when it ends), so
   * this only bounds how fresh progress is; without it, each poll is one or two small HTTP calls.
   */
  pollIntervalMs: Type.Integer({ minimum: 50, maximum: 600_000, default: 2_000 }),
  maxConcurrency: Type.Integer({ minimum: 1, maximum: 10_000, default: 8 }),
  timeouts: Type.Object({
    /** one API call (upload, /prompt, /history, /queue, cancel) */
    requestMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 30_000 }),
    /** downloading the finished video from /view */
    downloadMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 120_000 }),
  }, { additionalProperties: false, default: {} }),
  /** largest video accepted from /view */
  maxOutputBytes: Type.Integer({ minimum: 1024, maximum: 2 ** 31, default: 256 * 1024 * 1024 }),
}, { additionalProperties: false });

export type ComfyOptions = Static<typeof ComfyOptions>;

/** What the schema cannot check: the workflow file, the frames rule, baseUrl vs deployments. */
export function validateOptions(o: ComfyOptions): string[] {
  const problems: string[] = [];
  if (o.baseUrl === undefined && o.deployments === undefined) problems.push('option "baseUrl": is required (or "deployments", a list of ComfyUI servers)');
  if (o.deployments !== undefined && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined)) problems.push('option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both');
  if (o.deployments) {
    const names = deploymentNames(o.deployments);
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) problems.push(`option "deployments.${i}.name": "${n}" names two deployments (give each a unique name)`);
    });
  }
  if (typeof o.workflowFile === "string") {
    const read = readWorkflow(o.workflowFile, o.outputNode);
    problems.push(...read.problems.map((p) => `option "workflowFile": ${p}`));
  }
  const frames = framesProblem(o.framesFor);
  if (frames) problems.push(`option "framesFor": ${frames}`);
  return problems;
}

/** Each server's name: its own, else its URL's host:port (a second with the same host gets "#2" …). */
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
