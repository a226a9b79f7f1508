/**
 * A fake ComfyUI server speaking ComfyUI's HTTP and websocket API on a loopback port:
 *
 *   POST /upload/image (multipart: image, type, subfolder, overwrite) → {name, subfolder, type}
 *   POST /prompt {prompt, client_id} → {prompt_id, number, node_errors: {}}, or 400 with
 *        {error, node_errors} when the workflow does not validate (see below)
 *   GET  /ws?clientId=…   (websocket) status, execution_start, execution_cached, executing,
 *        progress {value, max}, executed, execution_success | execution_error |
 *        execution_interrupted, then executing {node: null} — sent to the prompt's client id
 *   GET  /history/{id} → {} until the prompt ended, then {id: {prompt, outputs, status}}
 *   GET  /queue → {queue_running: [[number, id, prompt, extra, outputs]], queue_pending: [...]}
 *   POST /queue {"delete": [ids]}, POST /interrupt {prompt_id?}
 *   GET  /view?filename&subfolder&type → the saved file (a real H.264 MP4: fake-clip.ts)
 *
 * Validation runs ComfyUI's checks a placeholder mistake would trip, and the placeholders check:
 * every node's class must be known, the workflow must have an output node, numeric inputs must be
 * numbers, LoadImage must name an uploaded file, and no string may still hold a {{placeholder}}.
 * The clip has the workflow's own width, height, length and fps, so a test can ffprobe what the
 * workflow asked for. Prompts run in parallel by default (`slots`: a real server runs one).
 *
 *   const comfy = await startFakeComfy({ queueMs: 50, runMs: 300 });
 *   comfy.url; comfy.calls; comfy.prompts.get(id); comfy.behave({ executionError: "CUDA out of memory" });
 *   comfy.failNext("prompt", 2, 503); comfy.reset(); await comfy.stop();
 */
import type { Server, ServerWebSocket } from "bun";
import { fakeClip, withRunTime } from "./fake-clip.ts";

export interface ComfyBehaviour {
  /** time a prompt waits before it runs (besides waiting for a slot) */
  queueMs?: number;
  /** time it runs, progress events spread over it */
  runMs?: number;
  /** prompts running at once (default: no limit) */
  slots?: number;
  /** /prompt answers 400 with node_errors for this node (e.g. a model file the server does not have) */
  nodeError?: { node: string; type?: string; message: string; details?: string };
  /** each prompt runs a time drawn uniformly from this range (ms) instead of runMs (benchmarks) */
  runMsRange?: [number, number];
  /** runs fail at their first sampler with execution_error and this exception message */
  executionError?: string;
  /** refuse websocket connections (the plugin must follow prompts by polling) */
  websocket?: boolean;
  /** what the output node saves */
  output?: "mp4" | "webm";
  /** history and queue forget every prompt (a restarted server) */
  lose?: boolean;
  /** the key an authenticating proxy in front demands (Bearer); undefined: none */
  apiKey?: string;
}

export type ComfyCallKind = "upload" | "prompt" | "history" | "queue" | "delete" | "interrupt" | "view" | "ws" | "other";
export interface ComfyCall {
  kind: ComfyCallKind;
  id?: string;
  at: number;
  auth: string | null;
}

export interface FakePrompt {
  id: string;
  number: number;
  clientId: string;
  workflow: Record<string, { class_type: string; inputs: Record<string, unknown> }>;
  behaviour: ComfyBehaviour;
  state: "pending" | "running" | "done";
  outcome?: "success" | "error" | "interrupted";
  submittedAt: number;
  startedAt?: number;
  /** when the run ended (the upstream's completion, for benchmarks) */
  endedAt?: number;
  timers: Array<ReturnType<typeof setTimeout>>;
  saved?: { filename: string; subfolder: string; node: string };
}

const KNOWN = new Set([
  "CheckpointLoaderSimple", "CLIPLoader", "CLIPTextEncode", "CLIPVisionLoader", "CLIPVisionEncode", "LoadImage", "ImageScale", "UNETLoader", "VAELoader", "VAEDecode",
  "VAEDecodeTiled", "LoraLoaderModelOnly", "ModelSamplingSD3", "WanImageToVideo", "Wan22ImageToVideoLatent", "KSampler", "KSamplerAdvanced", "KSamplerSelect", "SamplerCustom",
  "SamplerCustomAdvanced", "LTXVImgToVideo", "LTXVConditioning", "LTXVScheduler", "LTXVPreprocess", "CreateVideo", "SaveVideo", "VHS_VideoCombine", "SaveAnimatedWEBP",
]);
const OUTPUT_NODES = new Set(["SaveVideo", "VHS_VideoCombine", "SaveAnimatedWEBP"]);
const NUMERIC = new Set(["width", "height", "length", "batch_size", "steps", "seed", "noise_seed", "cfg", "start_at_step", "end_at_step", "shift", "fps", "frame_rate", "strength", "max_shift", "base_shift", "terminal", "strength_model", "crf"]);

export async function startFakeComfy(initial: ComfyBehaviour = {}) {
  let behaviour: ComfyBehaviour = { ...initial };
  const calls: ComfyCall[] = [];
  const prompts = new Map<string, FakePrompt>();
  const uploads = new Map<string, Uint8Array>();
  const files = new Map<string, Promise<Uint8Array>>();
  const sockets = new Map<string, Set<ServerWebSocket<{ clientId: string }>>>();
  const bursts: Array<{ kind: ComfyCallKind | "any"; left: number; status: number }> = [];
  let number = 0;
  let held = false;
  let saveCounter = 0;

  const send = (clientId: string, type: string, data: Record<string, unknown>) => {
    const text = JSON.stringify({ type, data: { ...data, timestamp: Date.now() } });
    for (const ws of sockets.get(clientId) ?? []) ws.send(text);
  };
  const running = () => [...prompts.values()].filter((p) => p.state === "running").length;
  const takeBurst = (kind: ComfyCallKind) => {
    const b = bursts.find((x) => x.left > 0 && (x.kind === kind || x.kind === "any"));
    if (!b) return null;
    b.left--;
    return b.status;
  };

  /** the clip the workflow describes: the first width/height/length inputs, the fps of its video node */
  const shapeOf = (wf: FakePrompt["workflow"]) => {
    const find = (names: string[]) => {
      for (const n of Object.values(wf)) for (const k of names) if (typeof n.inputs[k] === "number") return n.inputs[k] as number;
      return undefined;
    };
    return { width: find(["width"]) ?? 480, height: find(["height"]) ?? 832, frames: find(["length", "num_frames", "video_length"]) ?? 17, fps: find(["fps", "frame_rate"]) ?? 16 };
  };

  const startNext = () => {
    if (held) return;
    for (const p of [...prompts.values()].sort((a, b) => a.number - b.number)) {
      if (p.state !== "pending" || Date.now() - p.submittedAt < (p.behaviour.queueMs ?? 0)) continue;
      if (running() >= (p.behaviour.slots ?? Infinity)) return;
      run(p);
    }
  };

  const finish = (p: FakePrompt, outcome: FakePrompt["outcome"], extra: () => void = () => {}) => {
    for (const t of p.timers) clearTimeout(t);
    p.timers = [];
    p.state = "done";
    p.outcome = outcome;
    p.endedAt = Date.now();
    extra();
    send(p.clientId, "executing", { node: null, prompt_id: p.id });
    send(p.clientId, "status", { status: { exec_info: { queue_remaining: [...prompts.values()].filter((x) => x.state !== "done").length } } });
    startNext();
  };

  const run = (p: FakePrompt) => {
    p.state = "running";
    p.startedAt = Date.now();
    send(p.clientId, "execution_start", { prompt_id: p.id });
    send(p.clientId, "execution_cached", { nodes: [], prompt_id: p.id });
    const samplers = Object.entries(p.workflow).filter(([, n]) => /^(KSampler|KSamplerAdvanced|SamplerCustom|SamplerCustomAdvanced)$/.test(n.class_type));
    const runMs = p.behaviour.runMs ?? 200;
    const ticks = samplers.flatMap(([id, n]) => {
      const steps = Math.max(1, Math.min(20, Number(n.inputs.steps ?? 10) - Number(n.inputs.start_at_step ?? 0)));
      return Array.from({ length: steps }, (_, i) => ({ node: id, value: i + 1, max: steps }));
    });
    ticks.forEach((tick, i) => {
      p.timers.push(setTimeout(() => {
        if (tick.value === 1) send(p.clientId, "executing", { node: tick.node, display_node: tick.node, prompt_id: p.id });
        send(p.clientId, "progress", { value: tick.value, max: tick.max, prompt_id: p.id, node: tick.node });
      }, (runMs * i) / Math.max(1, ticks.length)));
    });
    if (p.behaviour.executionError !== undefined) {
      const [node, n] = samplers[0] ?? Object.entries(p.workflow)[0]!;
      p.timers.push(setTimeout(() => finish(p, "error", () => send(p.clientId, "execution_error", {
        prompt_id: p.id, node_id: node, node_type: n.class_type, executed: [], exception_message: p.behaviour.executionError, exception_type: "torch.OutOfMemoryError", traceback: ["..."], current_inputs: {}, current_outputs: {},
      })), runMs / 2));
      return;
    }
    p.timers.push(setTimeout(() => {
      const [node, n] = Object.entries(p.workflow).find(([, x]) => OUTPUT_NODES.has(x.class_type))!;
      const prefix = String(n.inputs.filename_prefix ?? "ComfyUI");
      const cut = prefix.lastIndexOf("/");
      const ext = p.behaviour.output === "webm" ? "webm" : "mp4";
      p.saved = { node, subfolder: cut >= 0 ? prefix.slice(0, cut) : "", filename: `${cut >= 0 ? prefix.slice(cut + 1) : prefix}_${String(++saveCounter).padStart(5, "0")}_.${ext}` };
      files.set(`${p.saved.subfolder}/${p.saved.filename}`, ext === "mp4" ? fakeClip(shapeOf(p.workflow)) : Promise.resolve(new TextEncoder().encode("\x1aE\xdf\xa3webm")));
      finish(p, "success", () => {
        send(p.clientId, "executing", { node, display_node: node, prompt_id: p.id });
        send(p.clientId, "executed", { node, display_node: node, output: outputOf(p), prompt_id: p.id });
        send(p.clientId, "execution_success", { prompt_id: p.id });
      });
    }, runMs));
  };

  const outputOf = (p: FakePrompt) => {
    if (!p.saved) return {};
    const file = { filename: p.saved.filename, subfolder: p.saved.subfolder, type: "output" };
    return p.workflow[p.saved.node]!.class_type === "VHS_VideoCombine" ? { gifs: [{ ...file, format: "video/h264-mp4", frame_rate: 16 }] } : { images: [file], animated: [true] };
  };

  const historyOf = (p: FakePrompt) => {
    const messages: Array<[string, Record<string, unknown>]> = [["execution_start", { prompt_id: p.id, timestamp: p.startedAt }], ["execution_cached", { nodes: [], prompt_id: p.id }]];
    if (p.outcome === "success") messages.push(["execution_success", { prompt_id: p.id, timestamp: p.endedAt }]);
    if (p.outcome === "error") {
      const [node, n] = Object.entries(p.workflow).find(([, x]) => /Sampler/.test(x.class_type)) ?? Object.entries(p.workflow)[0]!;
      messages.push(["execution_error", { prompt_id: p.id, node_id: node, node_type: n.class_type, executed: [], exception_message: p.behaviour.executionError, exception_type: "torch.OutOfMemoryError", traceback: [] }]);
    }
    if (p.outcome === "interrupted") messages.push(["execution_interrupted", { prompt_id: p.id, node_id: "", node_type: "", executed: [] }]);
    return {
      prompt: [p.number, p.id, p.workflow, { client_id: p.clientId }, p.saved ? [p.saved.node] : []],
      outputs: p.outcome === "success" ? { [p.saved!.node]: outputOf(p) } : {},
      status: { status_str: p.outcome === "success" ? "success" : "error", completed: p.outcome === "success", messages },
      meta: {},
    };
  };

  /** ComfyUI's validation, plus the placeholders check: [status, body] of a refusal, or null. */
  const validate = (wf: unknown): [number, unknown] | null => {
    if (typeof wf !== "object" || wf === null || Array.isArray(wf)) return [400, { error: { type: "invalid_prompt", message: "Cannot execute because the prompt is not a dict.", details: "", extra_info: {} }, node_errors: {} }];
    const nodes = wf as FakePrompt["workflow"];
    for (const [id, n] of Object.entries(nodes)) {
      if (!n || typeof n.class_type !== "string" || !KNOWN.has(n.class_type)) {
        return [400, { error: { type: "invalid_prompt", message: `Cannot execute because node ${n?.class_type ?? "?"} does not exist.`, details: `Node ID '#${id}'`, extra_info: {} }, node_errors: {} }];
      }
    }
    if (!Object.values(nodes).some((n) => OUTPUT_NODES.has(n.class_type))) return [400, { error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} }, node_errors: {} }];
    const nodeErrors: Record<string, unknown> = {};
    const refuse = (id: string, type: string, message: string, details: string) => {
      nodeErrors[id] = { errors: [{ type, message, details, extra_info: {} }], dependent_outputs: [], class_type: nodes[id]!.class_type };
    };
    for (const [id, n] of Object.entries(nodes)) {
      for (const [k, v] of Object.entries(n.inputs ?? {})) {
        if (typeof v === "string" && /\{\{\w+\}\}/.test(v)) refuse(id, "value_not_valid", "Unfilled placeholder", `${k}: ${JSON.stringify(v)} still holds a {{placeholder}}`);
        else if (NUMERIC.has(k) && typeof v !== "number" && !Array.isArray(v)) refuse(id, "invalid_input_type", "Failed to convert an input value to a INT value", `${k}, ${v}, invalid literal for int() with base 10: ${JSON.stringify(v)}`);
        else if (Array.isArray(v) && (v.length !== 2 || !(String(v[0]) in nodes))) refuse(id, "bad_linked_input", "Bad linked input, must be a length-2 list of [string, int]", `${k}, ${JSON.stringify(v)}`);
      }
      if (n.class_type === "LoadImage" && !uploads.has(String(n.inputs.image))) refuse(id, "custom_validation_failed", "Custom validation failed for node", `image - Invalid image file: ${n.inputs.image}`);
    }
    const forced = behaviour.nodeError;
    if (forced && forced.node in nodes) refuse(forced.node, forced.type ?? "value_not_in_list", forced.message, forced.details ?? "");
    if (Object.keys(nodeErrors).length) return [400, { error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "", extra_info: {} }, node_errors: nodeErrors }];
    return null;
  };

  const json = (body: unknown, status = 200) => Response.json(body, { status });

  const server: Server<{ clientId: string }> = Bun.serve<{ clientId: string }>({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req, srv) {
      const url = new URL(req.url);
      const auth = req.headers.get("authorization");
      const record = (kind: ComfyCallKind, id?: string) => calls.push({ kind, id, at: Date.now(), auth });
      const path = url.pathname;
      if (behaviour.apiKey !== undefined && auth !== `Bearer ${behaviour.apiKey}`) {
        record("other");
        return json({ error: "Unauthorized" }, 401);
      }
      if (path === "/ws") {
        record("ws");
        if (behaviour.websocket === false) return new Response("websocket disabled", { status: 403 });
        const clientId = url.searchParams.get("clientId") || crypto.randomUUID().replace(/-/g, "");
        return srv.upgrade(req, { data: { clientId } }) ? undefined : new Response("upgrade failed", { status: 400 });
      }
      const kind: ComfyCallKind =
        path === "/upload/image" ? "upload" : path === "/prompt" ? "prompt" : path.startsWith("/history/") ? "history" : path === "/queue" ? (req.method === "POST" ? "delete" : "queue") : path === "/interrupt" ? "interrupt" : path === "/view" ? "view" : "other";
      const burst = takeBurst(kind);
      if (burst !== null) {
        record(kind);
        return json({ error: `injected ${burst}` }, burst);
      }
      switch (kind) {
        case "upload": {
          record(kind);
          const form = await req.formData();
          const image = form.get("image");
          if (!(image instanceof Blob)) return json({ error: "no image" }, 400);
          const name = (image as File).name || "upload.png";
          const subfolder = String(form.get("subfolder") ?? "");
          uploads.set(subfolder ? `${subfolder}/${name}` : name, new Uint8Array(await image.arrayBuffer()));
          return json({ name, subfolder, type: String(form.get("type") ?? "input") });
        }
        case "prompt": {
          const body = (await req.json().catch(() => null)) as { prompt?: unknown; client_id?: string } | null;
          const refused = validate(body?.prompt);
          if (refused) {
            record(kind);
            return json(refused[1], refused[0]);
          }
          const id = crypto.randomUUID();
          record(kind, id);
          const p: FakePrompt = { id, number: number++, clientId: body!.client_id ?? "", workflow: body!.prompt as FakePrompt["workflow"], behaviour: withRunTime(behaviour), state: "pending", submittedAt: Date.now(), timers: [] };
          prompts.set(id, p);
          p.timers.push(setTimeout(startNext, p.behaviour.queueMs ?? 0));
          return json({ prompt_id: id, number: p.number, node_errors: {} });
        }
        case "history": {
          const id = decodeURIComponent(path.slice("/history/".length));
          record(kind, id);
          const p = prompts.get(id);
          return json(p && p.state === "done" && !behaviour.lose ? { [id]: historyOf(p) } : {});
        }
        case "queue": {
          record(kind);
          const row = (p: FakePrompt) => [p.number, p.id, p.workflow, { client_id: p.clientId }, []];
          const list = behaviour.lose ? [] : [...prompts.values()];
          return json({ queue_running: list.filter((p) => p.state === "running").map(row), queue_pending: list.filter((p) => p.state === "pending").map(row) });
        }
        case "delete": {
          const body = (await req.json().catch(() => ({}))) as { delete?: string[]; clear?: boolean };
          for (const id of body.delete ?? []) {
            record(kind, id);
            const p = prompts.get(id);
            if (p?.state === "pending") {
              for (const t of p.timers) clearTimeout(t);
              prompts.delete(id);
            }
          }
          return new Response(null, { status: 200 });
        }
        case "interrupt": {
          const body = (await req.json().catch(() => ({}))) as { prompt_id?: string };
          record(kind, body.prompt_id);
          for (const p of prompts.values()) {
            if (p.state !== "running" || (body.prompt_id && body.prompt_id !== p.id)) continue;
            finish(p, "interrupted", () => send(p.clientId, "execution_interrupted", { prompt_id: p.id, node_id: "", node_type: "", executed: [] }));
          }
          return new Response(null, { status: 200 });
        }
        case "view": {
          const key = `${url.searchParams.get("subfolder") ?? ""}/${url.searchParams.get("filename") ?? ""}`;
          record(kind, key);
          const file = files.get(key);
          if (!file || url.searchParams.get("type") !== "output") return json({ error: "file not found" }, 404);
          return new Response(await file, { headers: { "content-type": key.endsWith(".mp4") ? "video/mp4" : "video/webm" } });
        }
        default:
          record("other");
          return json({ error: "not found" }, 404);
      }
    },
    websocket: {
      open(ws) {
        const set = sockets.get(ws.data.clientId) ?? new Set();
        set.add(ws);
        sockets.set(ws.data.clientId, set);
        ws.send(JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: 0 } }, sid: ws.data.clientId } }));
      },
      message() {},
      close(ws) {
        sockets.get(ws.data.clientId)?.delete(ws);
      },
    },
  });

  const origin = `http://127.0.0.1:${server.port}`;
  return {
    url: origin,
    calls,
    prompts,
    uploads,
    count: (kind: ComfyCallKind) => calls.filter((c) => c.kind === kind).length,
    behave(b: ComfyBehaviour) {
      behaviour = { ...initial, ...b };
    },
    failNext(kind: ComfyCallKind | "any", n: number, status: number) {
      bursts.push({ kind, left: n, status });
    },
    /** close every websocket (a network blip): the plugin must notice and poll */
    dropSockets() {
      for (const set of sockets.values()) for (const ws of set) ws.close();
    },
    /** a backlog: prompts stay pending until release(), then run (benchmarks: every job in flight at once) */
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const p of prompts.values()) if (p.state === "pending") p.submittedAt = Math.min(p.submittedAt, Date.now() - (p.behaviour.queueMs ?? 0));
      startNext();
    },
    reset() {
      held = false;
      behaviour = { ...initial };
      calls.length = 0;
      bursts.length = 0;
      for (const p of prompts.values()) for (const t of p.timers) clearTimeout(t);
      prompts.clear();
    },
    async stop() {
      for (const p of prompts.values()) for (const t of p.timers) clearTimeout(t);
      await server.stop(true);
    },
  };
}

export type FakeComfy = Awaited<ReturnType<typeof startFakeComfy>>;
