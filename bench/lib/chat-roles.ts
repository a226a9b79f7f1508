/**
 * The processes bench/chat-proxy.ts starts next to reelay, one role each:
 *   bun bench/lib/chat-roles.ts upstream <port>           a fast fake OpenAI-compatible upstream
 *   bun bench/lib/chat-roles.ts anthropic-upstream <port> a fast fake Anthropic Messages API (the same answer)
 *   bun bench/lib/chat-roles.ts proxy <port> <target>     the minimal Bun.serve + fetch proxy
 *   bun bench/lib/chat-roles.ts ttfb <url> <keys> <n> <s> [api] n loops of streamed requests, prints TTFB
 *   bun bench/lib/chat-roles.ts ttfb-rate <url> <keys> <r> <s> [api] r streams a second (open loop), prints TTFB
 * (api: `chat`, the default, streams BODY's chat request; `messages` the same request in Anthropic's
 * Messages API, key in x-api-key, for bench/messages.ts; `native` that request for the model served
 * by the anthropic plugin, passed through natively)
 * upstream and proxy print "ready" once listening.
 */
export const messages = [{ role: "user", content: "Name three colours." }];
export const BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16 });
export const STREAM_BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16, stream: true });
/** the same request in Anthropic's Messages API (bench/messages.ts) */
export const MESSAGES_BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16 });
export const MESSAGES_STREAM_BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16, stream: true });
/** the same Messages request for `bench-claude`, an anthropic-plugin model: passed through natively */
export const NATIVE_BODY = JSON.stringify({ model: "bench-claude", messages, max_tokens: 16 });
export const NATIVE_STREAM_BODY = JSON.stringify({ model: "bench-claude", messages, max_tokens: 16, stream: true });
type Api = "chat" | "messages" | "native";
const streamRequest = (api: Api, key: string): { headers: Record<string, string>; body: string } =>
  api === "chat"
    ? { headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: STREAM_BODY }
    : { headers: { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" }, body: api === "native" ? NATIVE_STREAM_BODY : MESSAGES_STREAM_BODY };

if (import.meta.main) {
  // exit (rather than die) on a signal, so `bun --cpu-prof` writes the role's profile
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(0));
  const [role, a, b, c, d, e] = process.argv.slice(2);
  const api = (e ?? "chat") as Api;
  if (role === "upstream") upstream(Number(a));
  else if (role === "anthropic-upstream") anthropicUpstream(Number(a));
  else if (role === "proxy") proxy(Number(a), b!);
  else if (role === "ttfb") await ttfb(a!, b!, Number(c), Number(d), api);
  else if (role === "ttfb-rate") await ttfbAtRate(a!, b!, Number(c), Number(d), api);
  else throw new Error(`unknown role ${role}`);
}

/** A fixed completion, or 6 SSE chunks + usage + [DONE] written at once. */
function upstream(port: number) {
  const completion = JSON.stringify({
    id: "chatcmpl-bench", object: "chat.completion", created: 1700000000, model: "bench-upstream",
    choices: [{ index: 0, message: { role: "assistant", content: "Red, green and blue." }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
  });
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1700000000, model: "bench-upstream", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null })}\n\n`;
  const words = ["Red", ",", " green", " and", " blue", "."];
  const rest = words.slice(1).map((w) => chunk({ content: w }, null)).join("") + chunk({}, "stop") +
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1700000000, model: "bench-upstream", choices: [], usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 } })}\n\ndata: [DONE]\n\n`;
  const enc = new TextEncoder();
  const first = enc.encode(chunk({ role: "assistant", content: words[0] }, null));
  const tail = enc.encode(rest);
  Bun.serve({
    port, hostname: "127.0.0.1",
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean };
      if (!body.stream) return new Response(completion, { headers: { "content-type": "application/json" } });
      return new Response(new ReadableStream({ start(ctl) { ctl.enqueue(first); ctl.enqueue(tail); ctl.close(); } }), { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log("ready");
}

/** The same answer as Anthropic's Messages API: a fixed message, or its events with the first word first, the rest at once. */
function anthropicUpstream(port: number) {
  const usage = { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 6 };
  const message = { id: "msg_bench", type: "message", role: "assistant", model: "bench-claude-up", content: [{ type: "text", text: "Red, green and blue." }], stop_reason: "end_turn", stop_sequence: null, usage };
  const json = JSON.stringify(message);
  const ev = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
  const words = ["Red", ",", " green", " and", " blue", "."];
  const delta = (w: string) => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: w } });
  const enc = new TextEncoder();
  const first = enc.encode(ev("message_start", { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }) + ev("ping", {}) +
    ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) + delta(words[0]!));
  const tail = enc.encode(words.slice(1).map(delta).join("") + ev("content_block_stop", { index: 0 }) +
    ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 6 } }) + ev("message_stop", {}));
  Bun.serve({
    port, hostname: "127.0.0.1",
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean };
      if (!body.stream) return new Response(json, { headers: { "content-type": "application/json" } });
      return new Response(new ReadableStream({ start(ctl) { ctl.enqueue(first); ctl.enqueue(tail); ctl.close(); } }), { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log("ready");
}

/** What reelay is compared with: no auth, no billing, no logs; the answer body streamed back. */
function proxy(port: number, target: string) {
  Bun.serve({
    port, hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const res = await fetch(target + url.pathname, { method: req.method, headers: { "content-type": "application/json" }, body: await req.arrayBuffer() });
      return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
    },
  });
  console.log("ready");
}

/** One streamed request read to its end; returns the time to its first byte (ms). */
async function oneStream(url: string, key: string, api: Api): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", ...streamRequest(api, key) });
  const reader = res.body!.getReader();
  const first = await reader.read();
  const ms = performance.now() - t0;
  if (res.status !== 200 || first.done) throw new Error(`stream failed: ${res.status}`);
  while (!(await reader.read()).done);
  return ms;
}

function report(samples: number[]) {
  samples.sort((x, y) => x - y);
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
  console.log(JSON.stringify({ n: samples.length, p50: pct(50), p99: pct(99) }));
}

/**
 * Streams started at a steady `rate` per second whatever the answers (open loop), for `seconds`:
 * the first-byte time of a server that is not saturated, so no stream queues behind another.
 */
async function ttfbAtRate(url: string, keyList: string, rate: number, seconds: number, api: Api) {
  const keys = keyList.split(",");
  const samples: number[] = [];
  const running: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = start + (i * 1000) / rate;
    if (due > performance.now()) await Bun.sleep(due - performance.now());
    running.push(oneStream(url, keys[i % keys.length]!, api).then((ms) => void samples.push(ms)));
  }
  await Promise.all(running);
  report(samples);
}

/** `concurrency` loops of streamed requests for `seconds`; prints {n, p50, p99} of the time to first byte (ms). */
async function ttfb(url: string, keyList: string, concurrency: number, seconds: number, api: Api) {
  const samples: number[] = [];
  const until = performance.now() + seconds * 1000;
  const keys = keyList.split(",");
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    while (performance.now() < until) samples.push(await oneStream(url, keys[i % keys.length]!, api));
  }));
  report(samples);
}
