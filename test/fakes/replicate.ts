/**
 * A fake Replicate API (https://replicate.com/docs/reference/http) on a loopback port:
 *
 *   POST /v1/models/{owner}/{name}/predictions  {input, webhook?, webhook_events_filter?} → 201 prediction
 *   POST /v1/predictions                        {version, input, …}                     → 201 prediction
 *   GET  /v1/predictions/{id}                   → the prediction (404 {detail} when unknown)
 *   POST /v1/predictions/{id}/cancel            → the prediction, canceled
 *   GET  /v1/webhooks/default/secret            → {key: "whsec_…"}
 *   GET  /files/{id}.mp4                        → the output (a real H.264 MP4: fake-clip.ts)
 *
 * A prediction is `starting` for startMs, `processing` for runMs (its `logs` grow tqdm-style
 * lines, "45%|████▌     | 9/20"), then `succeeded` with `output` a URL, or `failed` with `error`,
 * or `canceled`. With a `webhook`, the events in `webhook_events_filter` (default: all) are POSTed
 * there signed per Standard Webhooks with the account's signing secret, by the `standardwebhooks`
 * package (the reference implementation), so the plugin's check is tested against real
 * signatures; `badSignature` signs with another secret. Errors have Replicate's shapes: 401
 * {title, detail, status}, 422 {title: "Input validation failed", detail, invalid_fields}, 429 with
 * Retry-After.
 *
 * The clip has `width` × `height` (default 480x832) and `num_frames`, or `duration` × 8 frames.
 */
import type { Server } from "bun";
import { Webhook } from "standardwebhooks";
import { fakeClip, withRunTime } from "./fake-clip.ts";

export interface ReplicateBehaviour {
  startMs?: number;
  runMs?: number;
  /** each prediction runs a time drawn uniformly from this range (ms) instead of runMs (benchmarks) */
  runMsRange?: [number, number];
  outcome?: "succeeded" | "failed";
  error?: string;
  /** sign webhooks with a secret that is not the account's */
  badSignature?: boolean;
  /** deliver no webhooks even when asked (a network that drops them): the plugin must poll */
  dropWebhooks?: boolean;
  /** the output URL, instead of this server's /files/{id}.mp4 */
  outputUrl?: string;
}

export type ReplicateCallKind = "create" | "get" | "cancel" | "secret" | "file" | "other";
export interface ReplicateCall {
  kind: ReplicateCallKind;
  id?: string;
  at: number;
  auth: string | null;
  path: string;
  body?: any;
}

export interface FakePrediction {
  id: string;
  model?: string;
  version?: string;
  input: Record<string, any>;
  webhook?: string;
  events: string[];
  behaviour: ReplicateBehaviour;
  createdAt: number;
  /** its start and run times count from here: creation, or the release of a held queue */
  clockFrom: number;
  status: "starting" | "processing" | "succeeded" | "failed" | "canceled";
  /** when it reached its final status (the upstream's completion, for benchmarks) */
  completedAt?: number;
  timers: Array<ReturnType<typeof setTimeout>>;
  webhookDeliveries: Array<{ event: string; status: number | "error" }>;
}

const FPS = 8;

export async function startFakeReplicate(initial: ReplicateBehaviour & { apiKey?: string; secret?: string } = {}) {
  const secret = initial.secret ?? "whsec_" + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
  const wrongSecret = "whsec_" + Buffer.from("not-the-account-signing-secret!!").toString("base64");
  let behaviour: ReplicateBehaviour = { ...initial };
  const calls: ReplicateCall[] = [];
  const predictions = new Map<string, FakePrediction>();
  const bursts: Array<{ kind: ReplicateCallKind | "any"; left: number; status: number }> = [];
  let origin = "";
  let held = false;
  let heldAt: number | null = null; // a held prediction's progress: null → starting, a percent → processing

  const takeBurst = (kind: ReplicateCallKind) => {
    const b = bursts.find((x) => x.left > 0 && (x.kind === kind || x.kind === "any"));
    if (!b) return null;
    b.left--;
    return b.status;
  };

  const iso = (t: number | undefined) => (t === undefined ? null : new Date(t).toISOString());
  const view = (p: FakePrediction) => {
    const t = Date.now() - p.clockFrom;
    const { startMs = 50, runMs = 200 } = p.behaviour;
    const steps = 20;
    const heldRunning = held && heldAt !== null && p.status === "starting" && p.timers.length === 0;
    const status = heldRunning ? "processing" : p.status;
    const done = heldRunning ? Math.floor((heldAt! / 100) * steps) : status === "processing" ? Math.min(steps, Math.floor(((t - startMs) / runMs) * steps)) : status === "succeeded" ? steps : 0;
    const logs = status === "starting" ? "" : Array.from({ length: done + 1 }, (_, i) => `${String(Math.round((i / steps) * 100)).padStart(3)}%|${"█".repeat(i / 2)}${" ".repeat(10 - Math.floor(i / 2))}| ${i}/${steps}`).join("\n");
    return {
      id: p.id,
      model: p.model ?? "owner/name",
      version: p.version ?? "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
      input: p.input,
      logs,
      output: p.status === "succeeded" ? p.behaviour.outputUrl ?? `${origin}/files/${p.id}.mp4` : null,
      data_removed: false,
      error: p.status === "failed" ? p.behaviour.error ?? "CUDA out of memory" : null,
      status,
      source: "api",
      created_at: iso(p.createdAt),
      started_at: status === "starting" ? null : iso(p.clockFrom + startMs),
      completed_at: iso(p.completedAt),
      urls: { get: `${origin}/v1/predictions/${p.id}`, cancel: `${origin}/v1/predictions/${p.id}/cancel`, web: `https://replicate.com/p/${p.id}` },
      ...(p.completedAt ? { metrics: { predict_time: (p.completedAt - p.clockFrom - startMs) / 1000 } } : {}),
    };
  };

  const deliver = async (p: FakePrediction, event: string) => {
    if (!p.webhook || !p.events.includes(event) || p.behaviour.dropWebhooks) return;
    const body = JSON.stringify(view(p));
    const id = `msg_${crypto.randomUUID().replace(/-/g, "")}`;
    const at = new Date();
    const signature = new Webhook(p.behaviour.badSignature ? wrongSecret : secret).sign(id, at, body);
    try {
      const res = await fetch(p.webhook, { method: "POST", headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature }, body });
      await res.body?.cancel();
      p.webhookDeliveries.push({ event, status: res.status });
    } catch {
      p.webhookDeliveries.push({ event, status: "error" });
    }
  };

  const finish = (p: FakePrediction, status: FakePrediction["status"]) => {
    if (p.status === "succeeded" || p.status === "failed" || p.status === "canceled") return;
    for (const t of p.timers) clearTimeout(t);
    p.status = status;
    p.completedAt = Date.now();
    void deliver(p, "completed");
  };

  const create = (body: any, model?: string): FakePrediction => {
    const p: FakePrediction = {
      id: Math.random().toString(36).slice(2, 12) + Math.random().toString(36).slice(2, 12),
      model, version: body.version, input: body.input, webhook: body.webhook,
      events: Array.isArray(body.webhook_events_filter) ? body.webhook_events_filter : ["start", "output", "logs", "completed"],
      behaviour: withRunTime(behaviour), createdAt: Date.now(), clockFrom: Date.now(), status: "starting", timers: [], webhookDeliveries: [],
    };
    predictions.set(p.id, p);
    if (!held) schedule(p);
    return p;
  };

  const schedule = (p: FakePrediction) => {
    p.clockFrom = Date.now();
    const { startMs = 50, runMs = 200 } = p.behaviour;
    p.timers.push(setTimeout(() => {
      p.status = "processing";
      void deliver(p, "start");
    }, startMs));
    p.timers.push(setTimeout(() => finish(p, p.behaviour.outcome === "failed" ? "failed" : "succeeded"), startMs + runMs));
  };

  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) => Response.json(body, { status, headers });

  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      const auth = req.headers.get("authorization");
      const body: any = req.method === "POST" ? await req.json().catch(() => undefined) : undefined;
      const file = /^\/files\/(\w+)\.mp4$/.exec(path);
      const byModel = /^\/v1\/models\/([\w.-]+)\/([\w.-]+)\/predictions$/.exec(path);
      const one = /^\/v1\/predictions\/(\w+)(\/cancel)?$/.exec(path);
      const kind: ReplicateCallKind = file ? "file" : byModel || path === "/v1/predictions" ? "create" : one ? (one[2] ? "cancel" : "get") : path === "/v1/webhooks/default/secret" ? "secret" : "other";
      const id = file?.[1] ?? one?.[1];
      calls.push({ kind, id, at: Date.now(), auth, path, body });

      if (kind === "file") {
        const p = predictions.get(id!);
        if (!p) return json({ detail: "Not found." }, 404);
        const i = p.input ?? {};
        const frames = Number(i.num_frames ?? Number(i.duration ?? 1) * FPS);
        return new Response(await fakeClip({ width: Number(i.width ?? 480), height: Number(i.height ?? 832), frames, fps: FPS }), { headers: { "content-type": "video/mp4" } });
      }
      if (initial.apiKey !== undefined && auth !== `Bearer ${initial.apiKey}`) return json({ title: "Unauthenticated", detail: "You did not pass a valid authentication token", status: 401 }, 401);
      const burst = takeBurst(kind);
      if (burst === 429) return json({ detail: "Request was throttled. Expected available in 1 second.", status: 429 }, 429, { "retry-after": "1" });
      if (burst !== null) return json({ title: `Injected ${burst}`, detail: `injected ${burst}`, status: burst }, burst);

      switch (kind) {
        case "create": {
          if (!body || typeof body.input !== "object" || body.input === null) return json({ title: "Input validation failed", detail: "- input: Invalid type. Expected: object", status: 422, invalid_fields: [{ type: "type", field: "input", description: "Invalid type. Expected: object" }] }, 422);
          if (typeof body.input.prompt !== "string") return json({ title: "Input validation failed", detail: "- input: prompt is required", status: 422, invalid_fields: [{ type: "required", field: "input", description: "prompt is required" }] }, 422);
          if (!byModel && typeof body.version !== "string") return json({ title: "Invalid version", detail: "version is required", status: 422 }, 422);
          return json(view(create(body, byModel ? `${byModel[1]}/${byModel[2]}` : undefined)), 201);
        }
        case "get": {
          const p = predictions.get(id!);
          return p ? json(view(p)) : json({ detail: "Not found.", status: 404 }, 404);
        }
        case "cancel": {
          const p = predictions.get(id!);
          if (!p) return json({ detail: "Not found.", status: 404 }, 404);
          finish(p, "canceled");
          return json(view(p));
        }
        case "secret":
          return json({ key: secret });
        default:
          return json({ detail: "Not found.", status: 404 }, 404);
      }
    },
  });
  origin = `http://127.0.0.1:${server.port}`;

  return {
    url: origin,
    secret,
    calls,
    predictions,
    count: (kind: ReplicateCallKind) => calls.filter((c) => c.kind === kind).length,
    behave(b: ReplicateBehaviour) {
      behaviour = { ...initial, ...b };
    },
    failNext(kind: ReplicateCallKind | "any", n: number, status: number) {
      bursts.push({ kind, left: n, status });
    },
    /** deliver an event of a prediction now, as Replicate would (signed per the current behaviour) */
    redeliver: (id: string, event = "completed") => deliver(predictions.get(id)!, event),
    /**
     * A backlog: predictions stay starting until release(), then run their times from then
     * (benchmarks: every job in flight at once). hold(percent): processing at that percent meanwhile
     * (a test sees each state whatever the machine's speed).
     */
    hold(percent?: number) {
      held = true;
      heldAt = percent ?? null;
    },
    release() {
      held = false;
      for (const p of predictions.values()) if (p.status === "starting" && p.timers.length === 0) schedule(p);
    },
    reset() {
      held = false;
      heldAt = null;
      behaviour = { ...initial };
      calls.length = 0;
      bursts.length = 0;
      for (const p of predictions.values()) for (const t of p.timers) clearTimeout(t);
      predictions.clear();
    },
    async stop() {
      for (const p of predictions.values()) for (const t of p.timers) clearTimeout(t);
      await server.stop(true);
    },
  };
}

export type FakeReplicate = Awaited<ReturnType<typeof startFakeReplicate>>;
