/**
 * A fake Ollama for the plugin's tests: a real HTTP server on a loopback port speaking Ollama's
 * native API (POST /api/chat, JSON or NDJSON stream; POST /api/embed; GET /api/version), with the
 * failures a real one has. Replies are deterministic: the words of REPLY, one per streamed line,
 * up to options.num_predict; prompt_eval_count is the prompt's word count plus 4 per message.
 *
 *   const ollama = await startFakeOllama();
 *   ollama.url                   // "http://127.0.0.1:<port>" — the plugin's baseUrl
 *   ollama.behave({ status: 404 })   // see Behaviour; ollama.behave({}) for normal
 *   ollama.requests, ollama.aborts   // what arrived, how many requests the client abandoned
 *   await ollama.stop()
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const REPLY = ["Hello", " from", " a", " fake", " Ollama", " server", ",", " one", " word", " per", " line", "."];

export interface Behaviour {
  /** answer this HTTP status with Ollama's {"error": "..."} body */
  status?: number;
  /** accept the request and never answer */
  hang?: boolean;
  /** answer 200 with an HTML page instead of JSON */
  garbage?: boolean;
  /** streamed: reset the connection after this many lines */
  dropAfterLines?: number;
  /** streamed: send {"error": …} after this many lines */
  errorAfterLines?: number;
  /** streamed: end the body after this many lines, without the final `done: true` line */
  truncateAfterLines?: number;
  /** streamed: wait this long before each line */
  delayMs?: number;
  /** leave prompt_eval_count out (what Ollama does when the prompt was cached) */
  noPromptCount?: boolean;
  /** answer with a tool call instead of text */
  toolCall?: { name: string; arguments: Record<string, unknown> };
}

export interface FakeOllama {
  url: string;
  port: number;
  requests: Array<{ path: string; body: any }>;
  aborts: number;
  behave(b: Behaviour): void;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeOllama(port = 0): Promise<FakeOllama> {
  let behaviour: Behaviour = {};
  const state: FakeOllama = { url: "", port: 0, requests: [], aborts: 0, behave: (b) => void (behaviour = b), stop: async () => {} };
  const server = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const body = raw ? JSON.parse(raw) : undefined;
    state.requests.push({ path: req.url ?? "", body });
    res.on("close", () => { if (!res.writableFinished) state.aborts++; });
    const b = behaviour;
    if (b.hang) return;
    if (b.garbage) return void res.writeHead(200, { "content-type": "text/html" }).end("<html><body>502 Bad Gateway</body></html>");
    if (b.status) return void res.writeHead(b.status, { "content-type": "application/json" }).end(JSON.stringify({ error: `fake ollama: HTTP ${b.status}` }));
    if (req.url === "/api/version") return void json(res, { version: "0.0.0-fake" });
    if (req.url === "/api/embed") return void json(res, { model: body.model, embeddings: body.input.map((t: string) => vector(t)), prompt_eval_count: body.input.join(" ").split(/\s+/).length });
    if (req.url !== "/api/chat") return void res.writeHead(404).end(JSON.stringify({ error: "not found" }));
    const words = REPLY.slice(0, Math.min(REPLY.length, body.options?.num_predict ?? REPLY.length));
    const promptCount = body.messages.reduce((n: number, m: { content: string }) => n + 4 + m.content.split(/\s+/).filter(Boolean).length, 0);
    const final = {
      model: body.model, created_at: new Date().toISOString(), done: true, done_reason: words.length < REPLY.length ? "length" : "stop",
      ...(b.noPromptCount ? {} : { prompt_eval_count: promptCount }), eval_count: words.length,
    };
    const calls = b.toolCall ? [{ function: b.toolCall }] : undefined;
    if (!body.stream) return void json(res, { ...final, message: { role: "assistant", content: calls ? "" : words.join(""), ...(calls ? { tool_calls: calls } : {}) } });
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    const lines = calls ? [] : words;
    for (const [i, w] of lines.entries()) {
      if (b.delayMs) await sleep(b.delayMs);
      if (res.destroyed) return;
      if (i === b.dropAfterLines) {
        await sleep(50); // the lines already written reach the client first
        return void res.socket?.destroy();
      }
      if (i === b.errorAfterLines) return void res.end(JSON.stringify({ error: "fake ollama: model runner crashed" }) + "\n");
      if (i === b.truncateAfterLines) return void res.end();
      res.write(JSON.stringify({ model: body.model, created_at: new Date().toISOString(), message: { role: "assistant", content: w }, done: false }) + "\n");
    }
    res.end(JSON.stringify({ ...final, message: { role: "assistant", content: "", ...(calls ? { tool_calls: calls } : {}) } }) + "\n");
  });
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}`;
  state.stop = () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  return state;
}

function json(res: ServerResponse, value: unknown) {
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
}

/** a deterministic unit vector per text */
function vector(text: string): number[] {
  let h = 2166136261;
  for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  const v = Array.from({ length: 8 }, (_, i) => Math.sin(h + i));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}
