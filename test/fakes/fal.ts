/**
 * A fake fal queue (https://docs.fal.ai/model-endpoints/queue) on a loopback port:
 *
 *   POST /{app id}                 the input → {request_id, status, response_url, status_url, cancel_url, queue_position}
 *   GET  {status_url}              → 202 {status: "IN_QUEUE", queue_position} | 202 {status: "IN_PROGRESS", logs}
 *                                    | 200 {status: "COMPLETED", response_url, metrics} (404 when unknown)
 *   GET  {response_url}            → {video: {url, content_type, file_name, file_size}, seed}, or the app's
 *                                    error payload: 422 {detail: [{loc, msg, type}]} / 500 {detail}
 *   PUT  {cancel_url}              → 202 {status: "CANCELLATION_REQUESTED"} | 400 {status: "ALREADY_COMPLETED"}
 *   GET  /files/{id}.mp4           → the video (a real H.264 MP4: fake-clip.ts)
 *
 * Requests live under the app's first two segments, as on fal
 * (`/fal-ai/kling-video/requests/{id}/status`) — or, with `urlStyle: "elsewhere"`, under a path no
 * client could guess (`/q/v2/{id}/poll?t=…`), so a test shows the plugin follows the URLs fal returns
 * instead of building them. Auth: `Authorization: Key <key>` (401 {detail} otherwise).
 *
 * The clip: `width` × `height` when given, else 480x832; `num_frames`, else `duration` (a string,
 * as Kling takes it) × 8 frames.
 */
import type { Server } from "bun";
import { fakeClip, withRunTime } from "./fake-clip.ts";

export interface FalBehaviour {
  queueMs?: number;
  runMs?: number;
  /** each request runs a time drawn uniformly from this range (ms) instead of runMs (benchmarks) */
  runMsRange?: [number, number];
  /** how the request ends: its result, the app's 422 validation error, or its 500 */
  outcome?: "ok" | "validation_error" | "app_error";
  urlStyle?: "fal" | "elsewhere";
  /** the result's video URL instead of this server's /files/{id}.mp4 */
  outputUrl?: string;
}

export type FalCallKind = "submit" | "status" | "result" | "cancel" | "file" | "other";
export interface FalCall {
  kind: FalCallKind;
  id?: string;
  at: number;
  auth: string | null;
  path: string;
  body?: any;
}

export interface FalRequest {
  id: string;
  app: string;
  input: Record<string, any>;
  behaviour: FalBehaviour;
  submittedAt: number;
  /** its queue time and run time count from here: submit, or the release of a held queue */
  clockFrom: number;
  cancelled: boolean;
  /** when it completed (the upstream's completion, for benchmarks) */
  completedAt?: number;
  urls: { status: string; response: string; cancel: string };
}

const FPS = 8;

export async function startFakeFal(initial: FalBehaviour & { apiKey?: string } = {}) {
  let behaviour: FalBehaviour = { ...initial };
  const calls: FalCall[] = [];
  const requests = new Map<string, FalRequest>();
  const byPath = new Map<string, { kind: "status" | "result" | "cancel"; id: string }>();
  const bursts: Array<{ kind: FalCallKind | "any"; left: number; status: number }> = [];
  let origin = "";
  let held = false;
  let heldAt: number | null = null; // a held request's progress: null → IN_QUEUE, a percent → IN_PROGRESS

  const takeBurst = (kind: FalCallKind) => {
    const b = bursts.find((x) => x.left > 0 && (x.kind === kind || x.kind === "any"));
    if (!b) return null;
    b.left--;
    return b.status;
  };
  const phase = (r: FalRequest): "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" => {
    if (r.cancelled) return "COMPLETED";
    if (held) return heldAt === null ? "IN_QUEUE" : "IN_PROGRESS";
    const t = Date.now() - r.clockFrom;
    const { queueMs = 50, runMs = 200 } = r.behaviour;
    if (t < queueMs) return "IN_QUEUE";
    if (t < queueMs + runMs) return "IN_PROGRESS";
    r.completedAt ??= r.clockFrom + queueMs + runMs;
    return "COMPLETED";
  };

  const json = (body: unknown, status = 200) => Response.json(body, { status });

  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      const auth = req.headers.get("authorization");
      const file = /^\/files\/([\w-]+)\.mp4$/.exec(path);
      const known = byPath.get(path);
      const kind: FalCallKind = file ? "file" : known ? known.kind : req.method === "POST" ? "submit" : /\/requests\/[\w-]+(\/status|\/cancel)?$/.test(path) ? (path.endsWith("/status") ? "status" : path.endsWith("/cancel") ? "cancel" : "result") : "other";
      const body: any = req.method === "POST" ? await req.json().catch(() => undefined) : undefined;
      const id = file?.[1] ?? known?.id ?? /\/requests\/([\w-]+)/.exec(path)?.[1];
      calls.push({ kind, id, at: Date.now(), auth, path, body });

      if (kind === "file") {
        const r = requests.get(id!);
        if (!r) return json({ detail: "Not Found" }, 404);
        const i = r.input;
        const frames = Number(i.num_frames ?? Number(i.duration ?? 1) * FPS);
        return new Response(await fakeClip({ width: Number(i.width ?? 480), height: Number(i.height ?? 832), frames, fps: FPS }), { headers: { "content-type": "video/mp4" } });
      }
      if (initial.apiKey !== undefined && auth !== `Key ${initial.apiKey}`) return json({ detail: "Authentication is required to access this application." }, 401);
      const burst = takeBurst(kind);
      if (burst !== null) return json({ detail: `injected ${burst}` }, burst);

      if (kind === "submit") {
        if (!body || typeof body !== "object") return json({ detail: [{ loc: ["body"], msg: "field required", type: "value_error.missing" }] }, 422);
        const app = path.slice(1);
        const rid = crypto.randomUUID();
        const b = withRunTime(behaviour);
        const base = b.urlStyle === "elsewhere" ? `${origin}/q/v2/${rid}` : `${origin}/${app.split("/").slice(0, 2).join("/")}/requests/${rid}`;
        const urls = b.urlStyle === "elsewhere"
          ? { status: `${base}/poll`, response: `${base}/out`, cancel: `${base}/stop` }
          : { status: `${base}/status`, response: base, cancel: `${base}/cancel` };
        requests.set(rid, { id: rid, app, input: body, behaviour: b, submittedAt: Date.now(), clockFrom: Date.now(), cancelled: false, urls });
        byPath.set(new URL(urls.status).pathname, { kind: "status", id: rid });
        byPath.set(new URL(urls.response).pathname, { kind: "result", id: rid });
        byPath.set(new URL(urls.cancel).pathname, { kind: "cancel", id: rid });
        const queued = [...requests.values()].filter((r) => phase(r) === "IN_QUEUE").length - 1;
        return json({ status: "IN_QUEUE", request_id: rid, response_url: urls.response, status_url: urls.status, cancel_url: urls.cancel, queue_position: Math.max(0, queued) });
      }
      const r = id ? requests.get(id) : undefined;
      if (!r || (!known && r.behaviour.urlStyle === "elsewhere")) return json({ detail: "Request not found" }, 404);
      switch (kind) {
        case "status": {
          const p = phase(r);
          if (p === "IN_QUEUE") return json({ status: p, queue_position: [...requests.values()].filter((x) => phase(x) === "IN_QUEUE" && x.submittedAt < r.submittedAt).length, response_url: r.urls.response }, 202);
          if (p === "IN_PROGRESS") {
            const pct = held && heldAt !== null ? heldAt : Math.floor(((Date.now() - r.clockFrom - (r.behaviour.queueMs ?? 50)) / (r.behaviour.runMs ?? 200)) * 100);
            return json({ status: p, response_url: r.urls.response, logs: [{ message: "Generating video...", level: "INFO", source: "user", timestamp: new Date().toISOString() }, { message: `${pct}% sampling`, level: "INFO", source: "user", timestamp: new Date().toISOString() }] }, 202);
          }
          return json({ status: p, response_url: r.urls.response, logs: null, metrics: { inference_time: (r.behaviour.runMs ?? 200) / 1000 } });
        }
        case "result": {
          if (phase(r) !== "COMPLETED") return json({ detail: "Request is still in progress" }, 400);
          if (r.cancelled) return json({ detail: "Request was cancelled" }, 400);
          if (r.behaviour.outcome === "validation_error") return json({ detail: [{ loc: ["body", "image_url"], msg: "Unsupported image: the face detector found no face", type: "image_load_error" }] }, 422);
          if (r.behaviour.outcome === "app_error") return json({ detail: "Internal Server Error: CUDA out of memory" }, 500);
          return json({ video: { url: r.behaviour.outputUrl ?? `${origin}/files/${r.id}.mp4`, content_type: "video/mp4", file_name: "output.mp4", file_size: 1234 }, seed: r.input.seed ?? 0 });
        }
        case "cancel": {
          if (phase(r) === "COMPLETED") return json({ status: "ALREADY_COMPLETED" }, 400);
          r.cancelled = true;
          r.completedAt = Date.now();
          return json({ status: "CANCELLATION_REQUESTED" }, 202);
        }
        default:
          return json({ detail: "Not Found" }, 404);
      }
    },
  });
  origin = `http://127.0.0.1:${server.port}`;

  return {
    url: origin,
    calls,
    requests,
    count: (kind: FalCallKind) => calls.filter((c) => c.kind === kind).length,
    behave(b: FalBehaviour) {
      behaviour = { ...initial, ...b };
    },
    failNext(kind: FalCallKind | "any", n: number, status: number) {
      bursts.push({ kind, left: n, status });
    },
    /** when the request completed (or will), for benchmarks */
    completedAt: (id: string) => {
      const r = requests.get(id);
      return r ? (phase(r) === "COMPLETED" ? r.completedAt : undefined) : undefined;
    },
    /**
     * A backlog: requests stay IN_QUEUE until release(), then run their times from then (benchmarks:
     * every job in flight at once). hold(percent): IN_PROGRESS at that percent meanwhile (a test sees
     * each state whatever the machine's speed).
     */
    hold(percent?: number) {
      held = true;
      heldAt = percent ?? null;
    },
    release() {
      held = false;
      const now = Date.now();
      for (const r of requests.values()) if (r.completedAt === undefined && !r.cancelled) r.clockFrom = now;
    },
    reset() {
      held = false;
      heldAt = null;
      behaviour = { ...initial };
      calls.length = 0;
      bursts.length = 0;
      requests.clear();
      byPath.clear();
    },
    async stop() {
      await server.stop(true);
    },
  };
}

export type FakeFal = Awaited<ReturnType<typeof startFakeFal>>;
