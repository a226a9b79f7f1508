/**
 * POST /v1/videos as a job submission. OpenAI's SDK sends it as multipart/form-data (every field a
 * string, `input_reference` an uploaded file or `input_reference[image_url]`); other clients send
 * JSON (`seconds` as OpenAI's string "4" or an integer, `input_reference` a URL string or
 * {"image_url": …}). Both become the one VideoSubmission the first API's jobs are made from.
 */
import { createHash } from "node:crypto";
import type { AppDeps } from "../../deps.ts";
import { badRequest, tooLarge } from "../../errors.ts";
import { imageFromBytes, imageFromInline, imageFromUrl, imageLimits, type SourceImage } from "../videos/image-input.ts";
import { MAX_PROMPT_CHARS, MAX_STEPS } from "../videos/model.ts";
import type { VideoSubmission } from "../videos/submit.ts";
import { DEFAULT_SECONDS, DEFAULT_SIZE } from "./model.ts";

type Fields = Record<string, unknown>;

const IMAGE_HINT = "'input_reference' (an image file, an image URL, or {\"image_url\": …})";

export async function readCreateRequest(deps: Pick<AppDeps, "config" | "thumbnails">, body: unknown): Promise<VideoSubmission> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("The body must be a JSON object or multipart/form-data with 'model' and 'prompt'.", null);
  const f = body as Fields;
  const model = text(f, "model", 256, { required: true })!;
  const prompt = text(f, "prompt", MAX_PROMPT_CHARS, { required: true })!;
  if (prompt.length === 0) throw badRequest("'prompt' is required: a non-empty string.", "prompt");
  const reference = inputReference(f);
  const limits = imageLimits(deps);
  let image: (() => Promise<SourceImage>) | null = null;
  let imageId: string | null = null;
  if (reference instanceof Blob) {
    const file = reference;
    if (file.size > limits.maxImageBytes) throw tooLarge(`'input_reference' is ${file.size} bytes; the limit is ${limits.maxImageBytes}.`, "input_reference");
    const bytes = new Uint8Array(await file.arrayBuffer());
    imageId = createHash("sha256").update(bytes).digest("hex");
    image = () => imageFromBytes(bytes, limits, "input_reference");
  } else if (typeof reference === "string") {
    imageId = reference;
    image = /^https?:\/\//i.test(reference) ? () => imageFromUrl(reference, limits, "input_reference") : () => imageFromInline(reference, limits, "input_reference");
  }
  const seed = integer(f, "seed", 0, 2 ** 32 - 1);
  const steps = integer(f, "steps", 1, MAX_STEPS);
  const negativePrompt = text(f, "negative_prompt", MAX_PROMPT_CHARS);
  const webhookUrl = text(f, "webhook_url", 2048);
  return {
    model, prompt, negativePrompt, seed, steps, webhookUrl,
    seconds: integer(f, "seconds", 1, 3600),
    size: text(f, "size", 16),
    image,
    imageField: { param: "input_reference", hint: IMAGE_HINT },
    fingerprint: ["v1/videos", model, prompt, negativePrompt ?? null, imageId, seed ?? null, steps ?? null, webhookUrl ?? null],
    defaults: { seconds: DEFAULT_SECONDS, size: DEFAULT_SIZE },
    route: "/v1/videos",
  };
}

/** a file, a URL / data URL string, or null; {"image_url"} (JSON) and input_reference[image_url] (multipart) alike */
function inputReference(f: Fields): Blob | string | null {
  const raw = f.input_reference ?? (f["input_reference[image_url]"] !== undefined ? { image_url: f["input_reference[image_url]"] } : undefined)
    ?? (f["input_reference[file_id]"] !== undefined ? { file_id: f["input_reference[file_id]"] } : undefined);
  if (raw === undefined || raw === null || raw === "") return null;
  if (raw instanceof Blob) return raw;
  if (typeof raw === "string") return raw;
  if (typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as Fields;
    if (o.file_id !== undefined) throw badRequest("'input_reference.file_id' is not supported: reelay has no Files API for video references; upload the image, or give its URL as {\"image_url\": …}.", "input_reference", "unsupported_parameter");
    if (typeof o.image_url === "string" && o.image_url !== "") return o.image_url;
  }
  throw badRequest(`${IMAGE_HINT} is the only form of 'input_reference'.`, "input_reference", "invalid_image");
}

function text(f: Fields, name: string, max: number, o: { required?: boolean } = {}): string | undefined {
  const v = f[name];
  if (v === undefined || v === null) {
    if (o.required) throw badRequest(`'${name}' is required.`, name);
    return undefined;
  }
  if (typeof v !== "string") throw badRequest(`'${name}' must be a string.`, name);
  if (v.length > max) throw badRequest(`'${name}' is longer than ${max} characters.`, name);
  return v;
}

/** an integer, or a string of digits (OpenAI's `seconds` is a string; multipart fields all are) */
function integer(f: Fields, name: string, min: number, max: number): number | undefined {
  const v = f[name];
  if (v === undefined || v === null || v === "") return undefined;
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,10}$/.test(v.trim()) ? Number(v.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw badRequest(`'${name}' must be a whole number from ${min} to ${max}${name === "seconds" ? ", as OpenAI's string (\"4\") or an integer" : ""}.`, name, name === "seconds" ? "invalid_seconds" : "invalid_value");
  }
  return n;
}
