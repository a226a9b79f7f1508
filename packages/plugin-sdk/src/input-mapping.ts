/**
 * How reelay's video request becomes a backend's input object (SDK 1.2; remote-gpu-video's mapping,
 * shared). Backends name their fields differently (Wan wrappers say `image_base64` / `num_frames`,
 * Kling on fal `image_url` / `duration`, Replicate models `start_image` / `aspect_ratio`), so each
 * model's config maps source field → target spec:
 *
 *   "inputMapping": {
 *     "prompt": "prompt",
 *     "image": "image_base64",          // base64 …
 *     "image": "image:dataUrl",         // … or data:image/png;base64,…
 *     "seconds": "num_frames:*16+1",    // seconds × 16 + 1 (Wan wants 4k+1 frames at 16 fps)
 *     "seconds": "duration:string",     // "5" (fal's Kling takes the duration as a string)
 *     "size": "width,height",           // two integer fields; one name → "480x832"
 *     "size": "aspect_ratio:aspectRatio",   // "9:16" (the nearest of 1:1, 16:9, 9:16, 4:3, 3:4, 21:9)
 *     "size": "resolution:resolution",  // "480p" / "720p" / "1080p" by the short side
 *     "steps": "params.num_inference_steps",  // dots nest
 *     "negative_prompt": null           // null → not sent
 *   }
 *
 * Spec: `<target>[:<transform>]`. Unmapped sources use the plugin's defaults; fields the client did
 * not give (negative_prompt, steps) are left out.
 */
import type { VideoRequest } from "./capabilities.ts";

export const INPUT_SOURCES = ["prompt", "negative_prompt", "image", "seconds", "size", "seed", "steps", "job_id"] as const;
export type InputSource = (typeof INPUT_SOURCES)[number];
export type InputMapping = Partial<Record<InputSource, string | null>>;

/** remote-gpu-video's defaults (RunPod-style workers); a plugin passes its own to buildInput */
export const DEFAULT_INPUT_MAPPING: Record<InputSource, string | null> = {
  prompt: "prompt",
  negative_prompt: "negative_prompt",
  image: "image",
  seconds: "seconds",
  size: "width,height",
  seed: "seed",
  steps: "steps",
  job_id: null,
};

const TARGET = /^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/;
const MULTIPLY = /^\*(\d{1,4})(?:\+(\d{1,4}))?$/;
const RATIOS: Array<[string, number]> = [["1:1", 1], ["16:9", 16 / 9], ["9:16", 9 / 16], ["4:3", 4 / 3], ["3:4", 3 / 4], ["21:9", 21 / 9]];

/** Problems, each starting with the source's name and a closing quote: prefix them with `option "inputMapping.`. */
export function problemsWithMapping(m: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [source, spec] of Object.entries(m)) {
    if (!(INPUT_SOURCES as readonly string[]).includes(source)) {
      problems.push(`${source}" is not a request field (known: ${INPUT_SOURCES.join(", ")})`);
      continue;
    }
    if (spec === null) continue;
    if (typeof spec !== "string") {
      problems.push(`${source}" must be a target spec string or null`);
      continue;
    }
    const [target = "", transform, ...rest] = spec.split(":");
    const targets = source === "size" ? target.split(",") : [target];
    if (rest.length || targets.length > 2 || !targets.every((t) => TARGET.test(t))) {
      problems.push(`${source}" has an invalid target ${JSON.stringify(spec)} (field name, dots nest; size may name "width,height")`);
      continue;
    }
    if (transform === undefined) continue;
    const ok =
      (source === "image" && ["base64", "dataUrl"].includes(transform)) ||
      (source === "seconds" && (MULTIPLY.test(transform) || transform === "string")) ||
      (source === "size" && targets.length === 1 && ["aspectRatio", "resolution"].includes(transform));
    if (!ok) problems.push(`${source}" has an unknown transform ":${transform}" (image: base64 | dataUrl; seconds: *N, *N+M or string; size with one target: aspectRatio | resolution)`);
  }
  return problems;
}

/** Builds the input object (a validated mapping assumed); `defaults` are the plugin's, for unmapped sources. */
export function buildInput(req: VideoRequest, mapping: InputMapping, staticInput: Record<string, unknown> = {}, defaults: Record<InputSource, string | null> = DEFAULT_INPUT_MAPPING): Record<string, unknown> {
  const input: Record<string, unknown> = structuredClone(staticInput);
  const specs = { ...defaults, ...mapping };
  for (const source of INPUT_SOURCES) {
    const spec = specs[source];
    if (spec == null) continue;
    const [target = "", transform] = spec.split(":");
    switch (source) {
      case "prompt": set(input, target, req.prompt); break;
      case "negative_prompt": if (req.negativePrompt !== undefined) set(input, target, req.negativePrompt); break;
      case "seed": set(input, target, req.seed); break;
      case "steps": if (req.steps !== undefined) set(input, target, req.steps); break;
      case "job_id": set(input, target, req.jobId); break;
      case "image": {
        const b64 = Buffer.from(req.image.bytes).toString("base64");
        set(input, target, transform === "dataUrl" ? `data:${req.image.mime};base64,${b64}` : b64);
        break;
      }
      case "seconds": {
        const m = transform ? MULTIPLY.exec(transform) : null;
        set(input, target, transform === "string" ? String(req.seconds) : m ? req.seconds * Number(m[1]) + Number(m[2] ?? 0) : req.seconds);
        break;
      }
      case "size": {
        const [w, h] = target.split(",");
        if (h) {
          set(input, w!, req.width);
          set(input, h, req.height);
        } else if (transform === "aspectRatio") set(input, w!, aspectRatio(req.width, req.height));
        else if (transform === "resolution") set(input, w!, resolution(req.width, req.height));
        else set(input, w!, `${req.width}x${req.height}`);
        break;
      }
    }
  }
  return input;
}

/** The nearest common aspect ratio: 480x832 → "9:16". */
export function aspectRatio(width: number, height: number): string {
  const r = width / height;
  return RATIOS.reduce((best, x) => (Math.abs(Math.log(x[1] / r)) < Math.abs(Math.log(best[1] / r)) ? x : best))[0];
}

/** The resolution class by the short side: ≤ 540 → "480p", ≤ 900 → "720p", else "1080p". */
export function resolution(width: number, height: number): string {
  const short = Math.min(width, height);
  return short <= 540 ? "480p" : short <= 900 ? "720p" : "1080p";
}

function set(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let at = obj;
  for (const p of parts.slice(0, -1)) {
    if (typeof at[p] !== "object" || at[p] === null || Array.isArray(at[p])) at[p] = {};
    at = at[p] as Record<string, unknown>;
  }
  at[parts.at(-1)!] = value;
}
