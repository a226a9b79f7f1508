/** Per-model options of remote-gpu-video: validation (boot stops on any problem) and parsing with defaults. */
import { problemsWithMapping, type InputMapping } from "./input-mapping.ts";

export interface Timeouts {
  /** one /run, /status or /cancel call, headers and body (a base64 MP4 in /status can be ~1.5 MB per 5 s) */
  requestMs: number;
  /** downloading a URL output */
  downloadMs: number;
}

export interface RemoteGpuOptions {
  /** endpoint base, e.g. https://api.runpod.ai/v2/<endpoint-id>; /run, /status/{id}, /cancel/{id} are appended */
  baseUrl: string;
  /** name of the environment variable holding the API key (never the key itself) */
  apiKeyEnv?: string;
  inputMapping: InputMapping;
  /** constant fields merged into `input` (mapped fields win on a clash) */
  staticInput: Record<string, unknown>;
  /** where the video sits in the /status answer, dotted; default: first of DEFAULT_OUTPUT_PATHS present */
  outputPath?: string;
  pollIntervalMs: number;
  maxConcurrency: number;
  timeouts: Timeouts;
  /** let URL outputs point at private / loopback addresses (a GPU box on the operator's own network) */
  allowPrivateNetwork: boolean;
  /** largest MP4 accepted, base64 or downloaded */
  maxOutputBytes: number;
}

/**
 * Defaults. pollIntervalMs 2000: an image-to-video job takes 30 s…5 min on a GPU, so polling every
 * 2 s costs ≤ 2 s of added latency and 15–150 status calls per job; RunPod's own SDK polls at 1 s.
 */
export const DEFAULTS = {
  pollIntervalMs: 2_000,
  maxConcurrency: 8,
  timeouts: { requestMs: 30_000, downloadMs: 120_000 } satisfies Timeouts,
  maxOutputBytes: 100 * 1024 * 1024,
};

export const DEFAULT_OUTPUT_PATHS = ["output.video", "output.video_base64", "output.video_url", "output.url", "output"];

const KNOWN = new Set(["baseUrl", "apiKeyEnv", "inputMapping", "staticInput", "outputPath", "pollIntervalMs", "maxConcurrency", "timeouts", "allowPrivateNetwork", "maxOutputBytes"]);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const intIn = (v: unknown, lo: number, hi: number) => typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi;

export function validateOptions(o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(o)) if (!KNOWN.has(key)) problems.push(`unknown option "${key}" (known: ${[...KNOWN].join(", ")})`);

  if (typeof o.baseUrl !== "string" || !o.baseUrl) problems.push(`"baseUrl" is required (e.g. "https://api.runpod.ai/v2/<endpoint-id>")`);
  else {
    let url: URL | undefined;
    try { url = new URL(o.baseUrl); } catch { problems.push(`"baseUrl" is not a valid URL: ${o.baseUrl}`); }
    if (url && url.protocol !== "http:" && url.protocol !== "https:") problems.push(`"baseUrl" must be http or https, got ${url.protocol}`);
    if (url && (url.search || url.hash || url.username)) problems.push(`"baseUrl" must not carry a query, fragment or credentials`);
  }
  if (o.apiKeyEnv !== undefined && (typeof o.apiKeyEnv !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(o.apiKeyEnv))) {
    problems.push(`"apiKeyEnv" must be the name of an environment variable (not the key itself)`);
  }
  if (o.inputMapping !== undefined) {
    if (!isObject(o.inputMapping)) problems.push(`"inputMapping" must be an object of source field → target spec`);
    else problems.push(...problemsWithMapping(o.inputMapping).map((p) => `"inputMapping.${p}`));
  }
  if (o.staticInput !== undefined && !isObject(o.staticInput)) problems.push(`"staticInput" must be an object of constant input fields`);
  if (o.outputPath !== undefined && (typeof o.outputPath !== "string" || !/^output(\.[\w-]+)*$/.test(o.outputPath))) {
    problems.push(`"outputPath" must be a dotted path starting with "output" (e.g. "output.video")`);
  }
  if (o.pollIntervalMs !== undefined && !intIn(o.pollIntervalMs, 50, 600_000)) problems.push(`"pollIntervalMs" must be an integer 50..600000`);
  if (o.maxConcurrency !== undefined && !intIn(o.maxConcurrency, 1, 10_000)) problems.push(`"maxConcurrency" must be an integer 1..10000`);
  if (o.maxOutputBytes !== undefined && !intIn(o.maxOutputBytes, 1024, 2 ** 31)) problems.push(`"maxOutputBytes" must be an integer 1024..2147483648`);
  if (o.allowPrivateNetwork !== undefined && typeof o.allowPrivateNetwork !== "boolean") problems.push(`"allowPrivateNetwork" must be a boolean`);
  if (o.timeouts !== undefined) {
    if (!isObject(o.timeouts)) problems.push(`"timeouts" must be an object`);
    else for (const [key, value] of Object.entries(o.timeouts)) {
      if (!(key in DEFAULTS.timeouts)) problems.push(`unknown option "timeouts.${key}" (known: ${Object.keys(DEFAULTS.timeouts).join(", ")})`);
      else if (!intIn(value, 1, 3_600_000)) problems.push(`"timeouts.${key}" must be a positive integer of milliseconds`);
    }
  }
  return problems;
}

/** Assumes validateOptions found no problems. */
export function parseOptions(o: Record<string, unknown>): RemoteGpuOptions {
  return {
    baseUrl: String(o.baseUrl).replace(/\/+$/, ""),
    apiKeyEnv: o.apiKeyEnv as string | undefined,
    inputMapping: (o.inputMapping as InputMapping | undefined) ?? {},
    staticInput: (o.staticInput as Record<string, unknown> | undefined) ?? {},
    outputPath: o.outputPath as string | undefined,
    pollIntervalMs: (o.pollIntervalMs as number | undefined) ?? DEFAULTS.pollIntervalMs,
    maxConcurrency: (o.maxConcurrency as number | undefined) ?? DEFAULTS.maxConcurrency,
    timeouts: { ...DEFAULTS.timeouts, ...(o.timeouts as Partial<Timeouts> | undefined) },
    allowPrivateNetwork: o.allowPrivateNetwork === true,
    maxOutputBytes: (o.maxOutputBytes as number | undefined) ?? DEFAULTS.maxOutputBytes,
  };
}
