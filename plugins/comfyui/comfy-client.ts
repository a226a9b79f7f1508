/**
 * ComfyUI's HTTP API, as one server's client: POST /upload/image (multipart), POST /prompt,
 * GET /history/{id}, GET /queue, POST /queue {"delete"}, POST /interrupt and GET /view. Failures
 * become the PluginError kinds the host expects: refused connections and timeouts are retryable,
 * 5xx and 429 too; /prompt's 400 with `node_errors` is a final failure naming the node.
 */
import { PluginError, readBodyCapped, type PluginContext } from "@reelay/plugin-sdk";

export interface HistoryEntry {
  outputs?: Record<string, Record<string, unknown>>;
  status?: { status_str?: string; completed?: boolean; messages?: Array<[string, Record<string, unknown>]> };
}

export interface OutputFile {
  filename: string;
  subfolder: string;
  type: string;
  node: string;
}

interface Answer {
  status: number;
  bytes: Uint8Array;
}

const JSON_LIMIT = 32 * 1024 * 1024;

export class ComfyClient {
  private readonly headers: Record<string, string>;

  constructor(private readonly ctx: PluginContext, readonly baseUrl: string, apiKey: string | undefined, private readonly timeouts: { requestMs: number; downloadMs: number }) {
    this.headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  }

  /** `ws://host/ws?clientId=…` for this server */
  wsUrl(clientId: string): string {
    return `${this.baseUrl.replace(/^http/, "ws")}/ws?clientId=${encodeURIComponent(clientId)}`;
  }

  wsHeaders(): Record<string, string> {
    return this.headers;
  }

  /** The source image into ComfyUI's input folder; its name as LoadImage takes it ("reelay/<name>"). */
  async uploadImage(name: string, bytes: Uint8Array, mime: string, signal: AbortSignal): Promise<string> {
    const form = new FormData();
    form.append("image", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: mime }), name);
    form.append("type", "input");
    form.append("subfolder", "reelay");
    form.append("overwrite", "true");
    const encoded = new Response(form);
    const contentType = encoded.headers.get("content-type")!; // with the boundary; read before the body (Bun drops it after)
    const body = new Uint8Array(await encoded.arrayBuffer());
    const answer = await this.send("POST", "/upload/image", signal, { body, contentType });
    const json = this.json(answer, "POST /upload/image") as { name?: unknown; subfolder?: unknown };
    if (typeof json.name !== "string" || !json.name) throw new PluginError("malformed", "ComfyUI accepted the image upload but named no file", { retryable: true });
    return typeof json.subfolder === "string" && json.subfolder ? `${json.subfolder}/${json.name}` : json.name;
  }

  /** Queue the workflow; its prompt_id. A 400 (the workflow does not validate on this server) fails the job, naming the node. */
  async queuePrompt(prompt: unknown, clientId: string, signal: AbortSignal): Promise<string> {
    const answer = await this.send("POST", "/prompt", signal, { json: { prompt, client_id: clientId } }, [400]);
    if (answer.status === 400) throw new PluginError("failed", `ComfyUI refused the workflow: ${describeRefusal(parse(answer.bytes))}`, { code: "comfyui_workflow_rejected", retryable: false });
    const json = this.json(answer, "POST /prompt") as { prompt_id?: unknown };
    if (typeof json.prompt_id !== "string" || !json.prompt_id) throw new PluginError("malformed", "ComfyUI accepted the workflow but sent no prompt_id", { retryable: true });
    return json.prompt_id;
  }

  /** The prompt's history entry, or null while it has none (queued, running, or unknown). */
  async history(promptId: string, signal: AbortSignal): Promise<HistoryEntry | null> {
    const json = this.json(await this.send("GET", `/history/${encodeURIComponent(promptId)}`, signal), "GET /history/{id}") as Record<string, HistoryEntry>;
    const entry = json[promptId];
    return entry && typeof entry === "object" ? entry : null;
  }

  /** Where the prompt is in the server's queue. */
  async queued(promptId: string, signal: AbortSignal): Promise<"running" | "pending" | "absent"> {
    const json = this.json(await this.send("GET", "/queue", signal), "GET /queue") as { queue_running?: unknown[]; queue_pending?: unknown[] };
    const has = (list: unknown) => Array.isArray(list) && list.some((item) => Array.isArray(item) && item[1] === promptId);
    return has(json.queue_running) ? "running" : has(json.queue_pending) ? "pending" : "absent";
  }

  /** Take the prompt out of the queue if it waits there; interrupt it if it runs. */
  async cancel(promptId: string, signal: AbortSignal): Promise<void> {
    const where = await this.queued(promptId, signal);
    if (where === "pending") await this.send("POST", "/queue", signal, { json: { delete: [promptId] } });
    // prompt_id: newer servers interrupt only that prompt; older ones interrupt what runs, which is it
    if (where === "running") await this.send("POST", "/interrupt", signal, { json: { prompt_id: promptId } });
  }

  /** An output file's bytes (GET /view), at most maxBytes. */
  async view(file: OutputFile, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    const q = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type });
    const answer = await this.send("GET", `/view?${q}`, signal, {}, [], { maxBytes, timeoutMs: this.timeouts.downloadMs });
    return answer.bytes;
  }

  private json(answer: Answer, what: string): Record<string, unknown> {
    const json = parse(answer.bytes);
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new PluginError("malformed", `ComfyUI answered ${what} with something that is not a JSON object`, { retryable: true });
    return json as Record<string, unknown>;
  }

  /** One call; statuses in `pass` are returned, any other non-2xx thrown as upstream_http. */
  private async send(method: string, path: string, signal: AbortSignal, body: { json?: unknown; body?: Uint8Array; contentType?: string } = {}, pass: number[] = [], limits = { maxBytes: JSON_LIMIT, timeoutMs: this.timeouts.requestMs }): Promise<Answer> {
    const deadline = AbortSignal.timeout(limits.timeoutMs);
    const both = AbortSignal.any([signal, deadline]);
    const what = `${method} ${path.replace(/\?.*$/, "").replace(/\/history\/.+$/, "/history/{id}")}`;
    const headers: Record<string, string> = { ...this.headers };
    let payload: string | Uint8Array<ArrayBuffer> | undefined;
    if (body.json !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body.json);
    } else if (body.body) {
      headers["content-type"] = body.contentType!;
      payload = body.body as Uint8Array<ArrayBuffer>;
    }
    try {
      const res = await this.ctx.fetch(this.baseUrl + path, { method, headers, body: payload, signal: both });
      const bytes = await readBodyCapped(res, limits.maxBytes, () => new PluginError("failed", `ComfyUI's answer to ${what} is larger than ${limits.maxBytes} bytes`, { code: "output_too_large", retryable: false }));
      if ((res.status < 200 || res.status > 299) && !pass.includes(res.status)) {
        const detail = errorText(parse(bytes)) ?? new TextDecoder().decode(bytes.subarray(0, 200));
        throw new PluginError("upstream_http", `ComfyUI answered ${what} with HTTP ${res.status}: ${detail.slice(0, 300)}`, { status: res.status });
      }
      return { status: res.status, bytes };
    } catch (err) {
      if (err instanceof PluginError) throw err;
      if (signal.aborted) throw signal.reason;
      if (deadline.aborted) throw new PluginError("timeout", `ComfyUI did not answer ${what} within ${limits.timeoutMs} ms`, { cause: err });
      throw new PluginError("connect", `ComfyUI unreachable (${what}): ${(err as Error)?.message ?? err}`, { cause: err });
    }
  }
}

/** The finished prompt's video: the output node's file, else the first .mp4 any node saved. */
export function videoOutput(entry: HistoryEntry, outputNode?: string): OutputFile | { problem: string } {
  const files: OutputFile[] = [];
  for (const [node, out] of Object.entries(entry.outputs ?? {})) {
    if (outputNode !== undefined && node !== outputNode) continue;
    for (const list of Object.values(out ?? {})) {
      if (!Array.isArray(list)) continue;
      for (const f of list) {
        if (f && typeof f === "object" && typeof f.filename === "string") files.push({ filename: f.filename, subfolder: typeof f.subfolder === "string" ? f.subfolder : "", type: typeof f.type === "string" ? f.type : "output", node });
      }
    }
  }
  const mp4 = files.find((f) => /\.mp4$/i.test(f.filename));
  if (mp4) return mp4;
  const where = outputNode === undefined ? "the workflow" : `node "${outputNode}"`;
  if (files.length) return { problem: `${where} saved ${files.map((f) => f.filename).slice(0, 3).join(", ")}, not an .mp4 (save with SaveVideo, format mp4, or VHS_VideoCombine, format video/h264-mp4)` };
  return { problem: `${where} saved no file (is a SaveVideo node in it?)` };
}

/** A failed run's message from its history: the node, its type and the exception. */
export function executionError(entry: HistoryEntry): { code: string; message: string } | null {
  const messages = entry.status?.messages ?? [];
  const error = messages.find(([type]) => type === "execution_error")?.[1];
  if (error) return { code: "comfyui_execution_error", message: describeNodeFailure(error) };
  if (messages.some(([type]) => type === "execution_interrupted")) return { code: "comfyui_interrupted", message: "the job was interrupted on the ComfyUI server" };
  if (entry.status?.status_str === "error") return { code: "comfyui_execution_error", message: "ComfyUI reported the run failed without saying where" };
  return null;
}

export function describeNodeFailure(e: Record<string, unknown>): string {
  const node = e.node_id !== undefined ? `node ${e.node_id}${e.node_type ? ` (${e.node_type})` : ""}` : "a node";
  const what = typeof e.exception_message === "string" ? e.exception_message.trim() : "failed";
  return `${node} failed: ${what}`.slice(0, 1_000);
}

/** /prompt's 400: `{error: {message, details}, node_errors: {"<id>": {class_type, errors: [{message, details}]}}}` */
function describeRefusal(body: unknown): string {
  const b = (body ?? {}) as { error?: { message?: string; details?: string }; node_errors?: Record<string, { class_type?: string; errors?: Array<{ message?: string; details?: string }> }> };
  const nodes = Object.entries(b.node_errors ?? {}).map(([id, n]) => {
    const errs = (n.errors ?? []).map((e) => [e.message, e.details].filter(Boolean).join(": ")).join("; ");
    return `node ${id}${n.class_type ? ` (${n.class_type})` : ""}: ${errs || "invalid"}`;
  });
  if (nodes.length) return nodes.join("; ").slice(0, 1_000);
  return [b.error?.message, b.error?.details].filter(Boolean).join(": ").slice(0, 1_000) || "HTTP 400 without details";
}

function errorText(body: unknown): string | undefined {
  const b = body as { error?: unknown; message?: unknown } | undefined;
  if (typeof b?.error === "string") return b.error;
  if (typeof (b?.error as { message?: unknown })?.message === "string") return (b!.error as { message: string }).message;
  return typeof b?.message === "string" ? b.message : undefined;
}

function parse(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}
