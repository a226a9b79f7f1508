/**
 * What the server answers between listening and having its app: the socket is opened first, so a
 * supervisor sees the process alive within milliseconds, while the database opens and migrates
 * (PGlite: ~0.5 s; a fresh data dir a little more). /healthz is 200 at once, /readyz is 503
 * "starting", and any other request waits for the app (bounded by `waitMs`, then 503 +
 * Retry-After) instead of being refused.
 */
import { randomId } from "../../ids.ts";
import { ApiError } from "../../errors.ts";

type Handler = (req: Request) => Response | Promise<Response>;

export interface StartupGate {
  fetch: Handler;
  /** from now on every request goes to `app` */
  open(app: Handler): void;
  /** boot failed: waiting requests get 503 */
  fail(err: unknown): void;
}

export function startupGate(waitMs: number): StartupGate {
  let app: Handler | null = null;
  let failed = false;
  let release!: () => void;
  const opened = new Promise<void>((r) => (release = r));

  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "x-request-id": randomId("req", 16), ...headers } });
  const unavailable = (message: string) =>
    json(503, new ApiError(503, "service_unavailable", message, { code: "starting" }).toJSON(), { "retry-after": "1" });

  const beforeApp = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz" && req.method === "GET") return json(200, { status: "ok" });
    if (path === "/readyz" && req.method === "GET") {
      return json(503, { status: "not_ready", checks: [{ name: "database", ok: false, detail: "starting: opening the database and applying migrations" }], models: [] });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<true>((r) => (timer = setTimeout(() => r(true), waitMs)));
    const late = await Promise.race([opened.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late || !app) return unavailable(failed ? "The server failed to start." : "The server is starting; retry shortly.");
    return app(req);
  };

  return {
    fetch: (req) => (app ? app(req) : beforeApp(req)),
    open(handler) {
      app = handler;
      release();
    },
    fail() {
      failed = true;
      release();
    },
  };
}
