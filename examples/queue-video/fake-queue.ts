/**
 * A fake queue-style video provider for the plugin's tests, shaped like fal's queue API, on a
 * loopback port:
 *
 *   POST /{app}                              → {request_id, status_url, response_url, cancel_url}
 *   GET  /{owner}/{name}/requests/{id}/status → {status: IN_QUEUE | IN_PROGRESS | COMPLETED, progress?}
 *   GET  /{owner}/{name}/requests/{id}        → {video: {url, content_type}} | 422 {detail: [{msg, type}]}
 *   PUT  /{owner}/{name}/requests/{id}/cancel → 202
 *   GET  /files/{id}.mp4                      → the video (a real 64x64 H.264 clip, fixtures/clip.mp4)
 *
 * `progress` (a percentage, 0–100) is this fake's addition: fal reports none, other queues do, and
 * the plugin must turn it into the fraction reelay wants. Requests need `Authorization: Key <key>`.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Behaviour {
  /** ms a job waits in the queue, then runs */
  queueMs?: number;
  runMs?: number;
  /** POST answers this HTTP status */
  submitStatus?: number;
  /** accept requests and never answer */
  hang?: boolean;
  /** new jobs end in a 422 content policy refusal */
  jobFails?: boolean;
  /** the result file is an HTML error page, not a video */
  notMp4?: boolean;
}

export interface FakeQueue {
  url: string;
  port: number;
  key: string;
  calls: string[];
  behave(b: Behaviour): void;
  stop(): Promise<void>;
}

const CLIP = new Uint8Array(await Bun.file(new URL("./fixtures/clip.mp4", import.meta.url)).arrayBuffer());

export async function startFakeQueue(port = 0, key = "fal-test-key-0123456789"): Promise<FakeQueue> {
  let behaviour: Behaviour = {};
  const jobs = new Map<string, { at: number; b: Behaviour; cancelled: boolean }>();
  const state: FakeQueue = { url: "", port: 0, key, calls: [], behave: (b) => void (behaviour = b), stop: async () => {} };
  const server = createServer(async (req, res) => {
    for await (const _ of req) {}
    const path = new URL(req.url ?? "/", "http://x").pathname;
    state.calls.push(`${req.method} ${path}`);
    const b = behaviour;
    const send = (status: number, body: unknown, type = "application/json") => void res.writeHead(status, { "content-type": type }).end(typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body));
    if (b.hang) return;
    if (path.startsWith("/files/")) return send(200, b.notMp4 ? "<html><body>Bucket not found</body></html>" : CLIP, b.notMp4 ? "text/html" : "video/mp4");
    if (req.headers.authorization !== `Key ${key}`) return send(401, { detail: "Invalid API key" });
    const m = /^\/([^/]+\/[^/]+)\/requests\/([\w-]+)(\/status|\/cancel)?$/.exec(path);
    if (req.method === "POST" && !m) {
      if (b.submitStatus) return send(b.submitStatus, { detail: `fake queue: HTTP ${b.submitStatus}` });
      const id = crypto.randomUUID();
      jobs.set(id, { at: Date.now(), b, cancelled: false });
      const base = `${state.url}/${path.split("/").slice(1, 3).join("/")}/requests/${id}`;
      return send(200, { request_id: id, status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel`, queue_position: 0 });
    }
    const job = m ? jobs.get(m[2]!) : undefined;
    if (!m || !job) return send(404, { detail: "Request not found" });
    const elapsed = Date.now() - job.at;
    const queueMs = job.b.queueMs ?? 50, runMs = job.b.runMs ?? 100;
    if (m[3] === "/cancel") {
      job.cancelled = true;
      return send(202, { status: "CANCELLATION_REQUESTED" });
    }
    const done = elapsed >= queueMs + runMs || job.cancelled;
    if (m[3] === "/status") {
      if (!done && elapsed < queueMs) return send(200, { status: "IN_QUEUE", queue_position: 0 });
      if (!done) return send(200, { status: "IN_PROGRESS", progress: Math.round(((elapsed - queueMs) / runMs) * 100), logs: [] });
      return send(200, { status: "COMPLETED" });
    }
    if (!done) return send(400, { detail: "Request is still in progress" });
    if (job.cancelled) return send(400, { detail: [{ msg: "Request was cancelled", type: "request_cancelled" }] });
    if (job.b.jobFails) return send(422, { detail: [{ msg: "The image was flagged by the content checker", type: "content_policy_violation" }] });
    return send(200, { video: { url: `${state.url}/files/${m[2]}.mp4`, content_type: "video/mp4", file_size: CLIP.byteLength } });
  });
  server.requestTimeout = 0;
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}`;
  state.stop = () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  return state;
}
