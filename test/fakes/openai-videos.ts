/**
 * A fake upstream speaking OpenAI's Videos API (https://platform.openai.com/docs/api-reference/videos),
 * as OpenAI, LiteLLM, new-api and other gateways do, on a loopback port:
 *
 *   POST   /v1/videos                multipart (model, prompt, seconds, size, input_reference file)
 *                                    or JSON (input_reference: {image_url}) → the video object, queued
 *   GET    /v1/videos/{id}           → {id, object: "video", status: queued | in_progress | completed |
 *                                       failed, progress 0–100, seconds, size, error: {code, message} …}
 *                                       with `openai-poll-after-ms`
 *   GET    /v1/videos/{id}/content   → the MP4 (a real H.264 clip: fake-clip.ts), 404 until completed
 *   DELETE /v1/videos/{id}           → {id, object: "video.deleted", deleted: true}
 *   GET    /v1/videos                → {object: "list", data, first_id, last_id, has_more}
 *
 * `seconds` must be a string, as OpenAI's API types it (a JSON number is a 400 naming the field);
 * `size` must be WxH. Errors are OpenAI's envelope. The official `openai` SDK talks to it
 * (openai-videos.test.ts). The clip is `size`, seconds × 8 frames.
 */
import type { Server } from "bun";
import { fakeClip, withRunTime } from "./fake-clip.ts";

export interface OpenAIVideosBehaviour {
  queueMs?: number;
  runMs?: number;
  /** each video runs a time drawn uniformly from this range (ms) instead of runMs (benchmarks) */
  runMsRange?: [number, number];
  /** jobs fail with this error instead of completing */
  fail?: { code: string; message: string };
  /** `seconds` values accepted (OpenAI's sora-2: "4", "8", "12"); default any positive integer string */
  allowedSeconds?: string[];
}

export type OpenAIVideosCallKind = "create" | "get" | "content" | "delete" | "list" | "other";
export interface OpenAIVideosCall {
  kind: OpenAIVideosCallKind;
  id?: string;
  at: number;
  auth: string | null;
  /** create: the fields as received (a file as {file: name, type, bytes}) */
  fields?: Record<string, unknown>;
  contentType?: string | null;
}

export interface FakeVideo {
  id: string;
  model: string;
  prompt: string;
  seconds: string;
  size: string;
  behaviour: OpenAIVideosBehaviour;
  createdAt: number;
  /** its queue time and run time count from here: creation, or the release of a held queue */
  clockFrom: number;
  deleted: boolean;
  reference?: { bytes: number; type: string };
  /** when it completed or failed (the upstream's completion, for benchmarks) */
  endedAt?: number;
}

const FPS = 8;

export async function startFakeOpenAIVideos(initial: OpenAIVideosBehaviour & { apiKey?: string } = {}) {
  let behaviour: OpenAIVideosBehaviour = { ...initial };
  const calls: OpenAIVideosCall[] = [];
  const videos = new Map<string, FakeVideo>();
  const bursts: Array<{ kind: OpenAIVideosCallKind | "any"; left: number; status: number }> = [];
  let held = false;
  let heldAt: number | null = null; // a held video's progress: null → queued, a percent → in_progress

  const takeBurst = (kind: OpenAIVideosCallKind) => {
    const b = bursts.find((x) => x.left > 0 && (x.kind === kind || x.kind === "any"));
    if (!b) return null;
    b.left--;
    return b.status;
  };
  const error = (status: number, message: string, type = "invalid_request_error", param: string | null = null, code: string | null = null) =>
    Response.json({ error: { message, type, param, code } }, { status });

  const statusOf = (v: FakeVideo) => {
    if (held) return heldAt === null ? { status: "queued" as const, progress: 0 } : { status: "in_progress" as const, progress: heldAt };
    const t = Date.now() - v.clockFrom;
    const { queueMs = 50, runMs = 200 } = v.behaviour;
    if (t < queueMs) return { status: "queued" as const, progress: 0 };
    if (t < queueMs + runMs) return { status: "in_progress" as const, progress: Math.floor(((t - queueMs) / runMs) * 100) };
    v.endedAt ??= v.clockFrom + queueMs + runMs;
    return v.behaviour.fail ? { status: "failed" as const, progress: 0 } : { status: "completed" as const, progress: 100 };
  };
  const view = (v: FakeVideo) => {
    const s = statusOf(v);
    return {
      id: v.id, object: "video", model: v.model, status: s.status, progress: s.progress,
      created_at: Math.floor(v.createdAt / 1000), completed_at: s.status === "completed" ? Math.floor(v.endedAt! / 1000) : null,
      expires_at: s.status === "completed" ? Math.floor(v.endedAt! / 1000) + 3600 : null,
      prompt: v.prompt, seconds: v.seconds, size: v.size, remixed_from_video_id: null,
      error: s.status === "failed" ? v.behaviour.fail : null,
    };
  };

  /** the create's fields, from multipart or JSON */
  const readFields = async (req: Request): Promise<Record<string, unknown> | null> => {
    const type = req.headers.get("content-type") ?? "";
    if (type.startsWith("multipart/form-data")) {
      const form = await req.formData();
      const out: Record<string, unknown> = {};
      for (const [k, v] of form.entries()) out[k] = typeof v === "string" ? v : { file: (v as File).name, type: v.type, bytes: (await v.arrayBuffer()).byteLength };
      return out;
    }
    if (type.startsWith("application/json")) return (await req.json().catch(() => null)) as Record<string, unknown> | null;
    return null;
  };

  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const auth = req.headers.get("authorization");
      const m = /^\/v1\/videos(?:\/([\w-]+))?(\/content)?$/.exec(url.pathname);
      const id = m?.[1];
      const kind: OpenAIVideosCallKind = !m ? "other" : m[2] ? "content" : id ? (req.method === "DELETE" ? "delete" : "get") : req.method === "POST" ? "create" : "list";
      const call: OpenAIVideosCall = { kind, id, at: Date.now(), auth, contentType: req.headers.get("content-type") };
      calls.push(call);
      if (initial.apiKey !== undefined && auth !== `Bearer ${initial.apiKey}`) return error(401, "Incorrect API key provided.", "invalid_request_error", null, "invalid_api_key");
      const burst = takeBurst(kind);
      if (burst !== null) return error(burst, `injected ${burst}`, burst >= 500 ? "server_error" : "invalid_request_error");
      const v = id ? videos.get(id) : undefined;
      switch (kind) {
        case "create": {
          const fields = await readFields(req);
          call.fields = fields ?? undefined;
          if (!fields) return error(400, "Send multipart/form-data or JSON.");
          if (typeof fields.prompt !== "string" || !fields.prompt) return error(400, "Missing required parameter: 'prompt'.", "invalid_request_error", "prompt", "missing_required_parameter");
          if (fields.seconds !== undefined && typeof fields.seconds !== "string") return error(400, `Invalid type for 'seconds': expected one of '4', '8', or '12', but got an integer instead.`, "invalid_request_error", "seconds", "invalid_type");
          const seconds = (fields.seconds as string | undefined) ?? "4";
          if (behaviour.allowedSeconds ? !behaviour.allowedSeconds.includes(seconds) : !/^[1-9]\d?$/.test(seconds)) return error(400, `Invalid value: '${seconds}'. Supported values are: ${(behaviour.allowedSeconds ?? ["4", "8", "12"]).map((x) => `'${x}'`).join(", ")}.`, "invalid_request_error", "seconds", "invalid_value");
          const size = (fields.size as string | undefined) ?? "720x1280";
          if (!/^\d{2,4}x\d{2,4}$/.test(size)) return error(400, `Invalid value: '${size}'.`, "invalid_request_error", "size", "invalid_value");
          const ref = fields.input_reference as { bytes?: number; type?: string; image_url?: string } | undefined;
          const video: FakeVideo = {
            id: `video_${crypto.randomUUID().replace(/-/g, "")}`, model: String(fields.model ?? "sora-2"), prompt: fields.prompt, seconds, size,
            behaviour: withRunTime(behaviour), createdAt: Date.now(), clockFrom: Date.now(), deleted: false,
            reference: ref ? { bytes: ref.bytes ?? ref.image_url?.length ?? 0, type: ref.type ?? "image_url" } : undefined,
          };
          videos.set(video.id, video);
          return Response.json(view(video));
        }
        case "get":
          if (!v || v.deleted) return error(404, `Video with id '${id}' not found.`, "invalid_request_error", null, "video_not_found");
          return Response.json(view(v), { headers: { "openai-poll-after-ms": "1000" } });
        case "content": {
          if (!v || v.deleted) return error(404, `Video with id '${id}' not found.`, "invalid_request_error", null, "video_not_found");
          if (statusOf(v).status !== "completed") return error(404, "Video is not ready yet, use GET /v1/videos/{video_id} to check status.", "invalid_request_error", null, "video_not_ready");
          const [w, h] = v.size.split("x").map(Number);
          return new Response(await fakeClip({ width: w!, height: h!, frames: Number(v.seconds) * FPS, fps: FPS }), { headers: { "content-type": "video/mp4" } });
        }
        case "delete":
          if (!v || v.deleted) return error(404, `Video with id '${id}' not found.`, "invalid_request_error", null, "video_not_found");
          v.deleted = true;
          v.endedAt ??= Date.now();
          return Response.json({ id: v.id, object: "video.deleted", deleted: true });
        case "list": {
          const data = [...videos.values()].filter((x) => !x.deleted).map(view).reverse();
          return Response.json({ object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false });
        }
        default:
          return error(404, `Unknown request URL: ${req.method} ${url.pathname}.`, "invalid_request_error", null, "unknown_url");
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    calls,
    videos,
    count: (kind: OpenAIVideosCallKind) => calls.filter((c) => c.kind === kind).length,
    behave(b: OpenAIVideosBehaviour) {
      behaviour = { ...initial, ...b };
    },
    failNext(kind: OpenAIVideosCallKind | "any", n: number, status: number) {
      bursts.push({ kind, left: n, status });
    },
    /** when the video ended (completed, failed or deleted), for benchmarks */
    endedAt: (id: string) => {
      const v = videos.get(id);
      if (!v) return undefined;
      if (!v.deleted) statusOf(v);
      return v.endedAt !== undefined && v.endedAt <= Date.now() ? v.endedAt : undefined;
    },
    /**
     * A backlog: videos stay queued until release(), then run their times from then (benchmarks:
     * every job in flight at once). hold(percent): they show in_progress at that percent meanwhile
     * (a test sees each state whatever the machine's speed).
     */
    hold(percent?: number) {
      held = true;
      heldAt = percent ?? null;
    },
    release() {
      held = false;
      const now = Date.now();
      for (const v of videos.values()) if (v.endedAt === undefined && !v.deleted) v.clockFrom = now;
    },
    reset() {
      held = false;
      heldAt = null;
      behaviour = { ...initial };
      calls.length = 0;
      bursts.length = 0;
      videos.clear();
    },
    async stop() {
      await server.stop(true);
    },
  };
}

export type FakeOpenAIVideos = Awaited<ReturnType<typeof startFakeOpenAIVideos>>;
