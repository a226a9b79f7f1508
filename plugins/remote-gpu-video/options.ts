/** Per-model options of remote-gpu-video: a schema the host validates at boot, plus the input mapping's own rules. */
import { Type, type Static } from "@reelay/plugin-sdk";
import { problemsWithMapping, type InputMapping } from "./input-mapping.ts";

/**
 * Defaults. pollIntervalMs 2000: an image-to-video job takes 30 s…5 min on a GPU, so polling every
 * 2 s costs ≤ 2 s of added latency and 15–150 status calls per job; RunPod's own SDK polls at 1 s.
 */
export const DEFAULTS = {
  pollIntervalMs: 2_000,
  maxConcurrency: 8,
  timeouts: { requestMs: 30_000, downloadMs: 120_000 },
  maxOutputBytes: 100 * 1024 * 1024,
};

export const DEFAULT_OUTPUT_PATHS = ["output.video", "output.video_base64", "output.video_url", "output.url", "output"];

export const RemoteGpuOptions = Type.Object({
  /** endpoint base, e.g. https://api.runpod.ai/v2/<endpoint-id>; /run, /status/{id}, /cancel/{id} are appended */
  baseUrl: Type.String({ pattern: "^https?://[^?#@]+$", description: 'e.g. "https://api.runpod.ai/v2/<endpoint-id>" (http or https, no query or credentials)' }),
  /** name of the environment variable holding the API key (never the key itself) */
  apiKeyEnv: Type.Optional(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$", description: "an environment variable name" })),
  /** reelay's request fields → the worker's input fields (input-mapping.ts) */
  inputMapping: Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), { default: {} }),
  /** constant fields merged into `input` (mapped fields win on a clash) */
  staticInput: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
  /** where the video sits in the /status answer, dotted; default: first of DEFAULT_OUTPUT_PATHS present */
  outputPath: Type.Optional(Type.String({ pattern: "^output(\\.[\\w-]+)*$", description: 'a dotted path starting with "output", e.g. "output.video"' })),
  pollIntervalMs: Type.Integer({ minimum: 50, maximum: 600_000, default: DEFAULTS.pollIntervalMs }),
  maxConcurrency: Type.Integer({ minimum: 1, maximum: 10_000, default: DEFAULTS.maxConcurrency }),
  timeouts: Type.Object({
    /** one /run, /status or /cancel call, headers and body (a base64 MP4 in /status can be ~1.5 MB per 5 s) */
    requestMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: DEFAULTS.timeouts.requestMs }),
    /** downloading a URL output */
    downloadMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: DEFAULTS.timeouts.downloadMs }),
  }, { additionalProperties: false, default: {} }),
  /** let URL outputs point at private / loopback addresses (a GPU box on the operator's own network) */
  allowPrivateNetwork: Type.Boolean({ default: false }),
  /** largest MP4 accepted, base64 or downloaded */
  maxOutputBytes: Type.Integer({ minimum: 1024, maximum: 2 ** 31, default: DEFAULTS.maxOutputBytes }),
}, { additionalProperties: false });

export type RemoteGpuOptions = Static<typeof RemoteGpuOptions> & { inputMapping: InputMapping };

/** What the schema cannot check: the mapping's targets and transforms. */
export function validateOptions(o: Static<typeof RemoteGpuOptions>): string[] {
  const problems = problemsWithMapping(o.inputMapping ?? {}).map((p) => `option "inputMapping.${p}`);
  if (Array.isArray(o.staticInput)) problems.push(`option "staticInput" must be an object of constant input fields, not a list`);
  return problems;
}

/** The options as the plugin uses them (defaults filled in by the host; the base URL without a trailing slash). */
export function parseOptions(o: Static<typeof RemoteGpuOptions>): RemoteGpuOptions {
  return { ...o, baseUrl: o.baseUrl.replace(/\/+$/, ""), inputMapping: o.inputMapping as InputMapping };
}
