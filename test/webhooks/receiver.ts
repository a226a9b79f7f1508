/**
 * A webhook receiver for the tests: a real HTTP server on port 0 that records every request
 * (headers, raw body, time) and answers from a script, so tests can make it fail, hang or say 410.
 * Signatures are checked with the `standardwebhooks` library, as a client's receiver would.
 */
import type { Server } from "bun";
import { Webhook } from "standardwebhooks";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  /** what we answered (0: held open by "hang", never answered in time) */
  answered: number;
  /** when the sender closed the connection without waiting for our answer (a hung request it gave up on) */
  abortedAt: number | null;
}

/** status to answer, "hang" to keep the request open until released, or a redirect */
export type Answer = number | "hang" | { status: 301 | 302 | 303 | 307 | 308; location: string };

export interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** answers for the next requests, in order; afterwards `fallback` (default 200) */
  script(answers: Answer[], fallback?: Answer): void;
  /** answer every hung request with 200 from now on */
  release(): void;
  /** wait this long before answering each request */
  delay(ms: number): void;
  /** requests whose path starts with `prefix` */
  on(prefix: string): Received[];
  waitFor(pred: (r: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  stop(): Promise<void>;
}

export function startReceiver(): Receiver {
  const requests: Received[] = [];
  let answers: Answer[] = [];
  let fallback: Answer = 200;
  const hung: Array<(r: Response) => void> = [];
  let delayMs = 0;
  let server: Server<unknown>;
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const body = await req.text();
      const rec: Received = { path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), body, at: Date.now(), answered: 0, abortedAt: null };
      requests.push(rec);
      req.signal.addEventListener("abort", () => void (rec.abortedAt ??= Date.now()), { once: true });
      const answer = answers.length ? answers.shift()! : fallback;
      if (delayMs) await Bun.sleep(delayMs);
      if (answer === "hang") {
        // `answered` stays 0: whoever sent it was not there to read a late answer
        return new Promise<Response>((resolve) => hung.push(resolve));
      }
      if (typeof answer === "object") {
        rec.answered = answer.status;
        return new Response(null, { status: answer.status, headers: { location: answer.location } });
      }
      rec.answered = answer;
      return new Response(answer >= 200 && answer < 300 ? "ok" : "no", { status: answer });
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    port: server.port!,
    requests,
    script(a, fb = 200) {
      answers = [...a];
      fallback = fb;
    },
    release() {
      fallback = 200;
      answers = answers.map((a) => (a === "hang" ? 200 : a));
      for (const r of hung.splice(0)) r(new Response("ok", { status: 200 }));
    },
    delay(ms) {
      delayMs = ms;
    },
    on: (prefix) => requests.filter((r) => r.path.startsWith(prefix)),
    async waitFor(pred, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!pred(requests)) {
        if (Date.now() > end) throw new Error(`receiver: condition not met within ${timeoutMs} ms; got ${requests.length} requests: ${JSON.stringify(requests.map((r) => [r.path, r.headers["webhook-id"], r.answered]))}`);
        await Bun.sleep(20);
      }
      return requests;
    },
    async stop() {
      for (const r of hung.splice(0)) r(new Response("bye", { status: 503 }));
      await server.stop(true);
    },
  };
}

/** Verify one received request the way a client's receiver does; returns the parsed event. */
export function verified(secret: string, r: Received): any {
  return new Webhook(secret).verify(r.body, r.headers);
}

/** Poll `read` until `done` holds (a receiver has an event a moment before reelay records it delivered). */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > end) return v;
    await Bun.sleep(50);
  }
}
