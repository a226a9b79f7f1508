/**
 * How reelay's video request becomes the worker's `input` object. Workers name their fields
 * differently (Wan wrappers say `image_base64` / `num_frames` / `num_inference_steps`, others
 * `image` / `duration`), so each model's config maps source field → target spec:
 *
 *   "inputMapping": {
 *     "prompt": "prompt",
 *     "image": "image_base64",          // base64 (default) …
 *     "image": "image:dataUrl",         // … or data:image/png;base64,…
 *     "seconds": "num_frames:*16+1",    // seconds × 16 + 1 (Wan 2.1 wants 4k+1 frames at 16 fps)
 *     "size": "width,height",           // two integer fields; one name → "480x832"
 *     "steps": "params.num_inference_steps",  // dots nest
 *     "negative_prompt": null           // null → not sent
 *   }
 *
 * Spec: `<target>[:<transform>]`. Unmapped sources use DEFAULT_MAPPING; fields the client did not
 * give (negative_prompt, steps) are left out.
 */
import type { VideoRequest } from "@reelay/plugin-sdk";

export const SOURCES = ["prompt", "negative_prompt", "image", "seconds", "size", "seed", "steps", "job_id"] as const;
export type Source = (typeof SOURCES)[number];
export type InputMapping = Partial<Record<Source, string | null>>;

export const DEFAULT_MAPPING: Record<Source, string | null> = {
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

export function problemsWithMapping(m: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [source, spec] of Object.entries(m)) {
    if (!(SOURCES as readonly string[]).includes(source)) {
      problems.push(`${source}" is not a request field (known: ${SOURCES.join(", ")})`);
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
    const ok = (source === "image" && ["base64", "dataUrl"].includes(transform)) || (source === "seconds" && MULTIPLY.test(transform));
    if (!ok) problems.push(`${source}" has an unknown transform ":${transform}" (image: base64 | dataUrl; seconds: *N or *N+M)`);
  }
  return problems;
}

/** Builds `input` (validated mapping assumed). */
export function buildInput(req: VideoRequest, mapping: InputMapping, staticInput: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = structuredClone(staticInput);
  const specs = { ...DEFAULT_MAPPING, ...mapping };
  for (const source of SOURCES) {
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
        set(input, target, m ? req.seconds * Number(m[1]) + Number(m[2] ?? 0) : req.seconds);
        break;
      }
      case "size": {
        const [w, h] = target.split(",");
        if (h) {
          set(input, w!, req.width);
          set(input, h, req.height);
        } else set(input, w!, `${req.width}x${req.height}`);
        break;
      }
    }
  }
  return input;
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
