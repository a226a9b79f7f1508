/**
 * The listening socket, opened before anything slow: the program evaluates only its config and
 * logger modules, listens, and only then imports the rest (the app, the database driver, the
 * plugins: ~55 ms of module evaluation in the compiled binary) and opens the database. Until the
 * app exists the startup gate answers: /healthz 200, /readyz 503 starting, other requests wait.
 * Nothing imported here may bring in the app's libraries (Elysia, TypeBox, drivers): they would
 * delay the socket; the boot yields to the event loop between its slow steps so the gate answers.
 */
import type { Server } from "bun";
import { randomId } from "./ids.ts";
import type { Config } from "./config.ts";
import { lastResortResponse } from "./http/last-resort.ts";
import type { Logger } from "./logger.ts";
import { startupGate, type StartupGate } from "./modules/health/startup-gate.ts";
import { assertPortFree } from "./net/assert-port-free.ts";

export interface Listener {
  server: Server<unknown>;
  gate: StartupGate;
}

export function listen(config: Config, logger: Logger): Listener {
  assertPortFree(config.host, config.port); // a taken port: a clear message naming it
  const gate = startupGate(config.loadWaitMs);
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // No limit here: Bun's own answer to an oversized body is a bare 413 with no envelope, id or
    // log line. createApp refuses a declared Content-Length over the limit before reading, and
    // counts every other body as it arrives (src/http/json-body.ts).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 255,
    development: false,
    fetch: gate.fetch,
    error: (err) => lastResortResponse(err, logger, randomId("req", 16)),
  });
  logger.info({ url: server.url.href, pid: process.pid }, "reelay listening");
  return { server, gate };
}
