/**
 * Boot: config -> logger -> listen (a startup gate answers /healthz at once) -> plugins -> model
 * registry (cheap: no weights yet) -> database (+ migrations) -> app -> background tasks and model
 * preloads. Models load on their first request unless preloaded (model-loader.ts). Shutdown
 * reverses it: stop accepting, finish in-flight requests, stop background work, close plugins and
 * the database.
 */
import type { Server } from "bun";
import { createApp } from "./app.ts";
import { KeyAuthenticator } from "./auth/authenticate-key.ts";
import { pruneAudit } from "./audit/audit-log.ts";
import { every, type BackgroundTask } from "./background.ts";
import { CreditEngine, PlanBook, sweepExpiredHolds } from "./billing/index.ts";
import { ConfigError } from "./errors.ts";
import { budgetAlertTask } from "./modules/webhooks/budget-alerts.ts";
import type { Config } from "./config.ts";
import { migrate, openDatabase, pendingMigrations } from "./db/index.ts";
import type { AppDeps } from "./deps.ts";
import { createLogger, type Logger } from "./logger.ts";
import { buildModels } from "./registry/build-models.ts";
import { upstreamReport } from "./registry/upstream-report.ts";
import type { ModelRegistry } from "./registry/model-registry.ts";
import { lockDataDir } from "./db/data-dir-lock.ts";
import { untilDatabaseAnswers } from "./db/unavailable.ts";
import { noOps, type OpsParts } from "./ops/hooks.ts";
import { createOps, type Ops } from "./ops/index.ts";
import { createBlobStores } from "./blob-store/index.ts";
import { videoBackgroundTasks } from "./modules/videos/index.ts";
import { startupGate } from "./modules/health/startup-gate.ts";
import { webhookBackgroundTasks } from "./modules/webhooks/index.ts";
import { responsesBackgroundTasks } from "./modules/responses/index.ts";
import { fileBackgroundTasks } from "./modules/files/index.ts";
import { batchBackgroundTasks } from "./modules/batches/index.ts";
import { createJobWatcher } from "./modules/videos/job-watcher.ts";
import { createThumbnails } from "./modules/videos/thumbnails.ts";
import { listen, type Listener } from "./listen.ts";
import { Lifecycle } from "./lifecycle.ts";

/**
 * A stop lets in-flight requests run for REELAY_SHUTDOWN_GRACE_MS; what comes after (settlements
 * written, plugins and the database closed) takes milliseconds when all is well, and is given this
 * much past the grace period: then the program exits without it (main.ts), status 1. A plugin whose
 * `close` never returns, or a database that stopped answering, cannot keep the process alive.
 */
export const SHUTDOWN_CLOSE_MS = 5_000;
/** after the drain timeout cut the open streams, how long they get to write their error event and settle before connections close */
const CUT_MS = 1_000;
/** of SHUTDOWN_CLOSE_MS, what settlements get to reach the database at least (the rest stays in the journal) */
const SETTLE_MIN_MS = 2_000;
/** the least time shutdown waits for requests already answered to end (their line and span) */
const IDLE_MIN_MS = 1_000;

/** One turn of the event loop: between the slow synchronous steps of the boot, the startup gate answers. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface Running {
  deps: AppDeps;
  app: ReturnType<typeof createApp>;
  server: Server<unknown> | null;
  url: string | null;
  stop(): Promise<void>;
}

/** Open the database and run migrations (also used by the CLI). */
export async function openAndMigrate(config: Config, logger: Logger) {
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.dbPoolSize });
  if (database.seeded) logger.info({ dataDir: config.dataDir }, "new PGlite data dir unpacked from the embedded seed");
  let applied: string[];
  try {
    applied = await untilDatabaseAnswers("migrations", config.dbBootWaitMs, () => migrate(database.db, undefined, (err, attempt) => logger.warn({ err, attempt }, "migrations: deadlocked with another session's queries (an older instance still serving?); tried again")), logger);
  } catch (e) {
    await database.close();
    unlock();
    throw e;
  }
  if (applied.length) logger.info({ applied, database: database.kind }, "migrations applied");
  const close = database.close;
  database.close = async () => {
    await close();
    unlock();
  };
  return database;
}

/** The migrations this binary would apply to the configured database (`reelay migrate --check`); applies none. */
export async function checkMigrations(config: Config): Promise<string[]> {
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  try {
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
    try {
      return await pendingMigrations(database.db);
    } finally {
      await database.close();
    }
  } finally {
    unlock();
  }
}

/** The app's dependencies; `ops` defaults to the no-op parts (no limits, logs or metrics). */
export async function buildDeps(config: Config, logger: Logger = createLogger(config), ops: OpsParts = noOps, models?: ModelRegistry, clock?: () => number): Promise<AppDeps> {
  // models first: a config mistake stops the boot before the slow database open
  const registry = models ?? (await buildModels(config, logger));
  const closeRegistry = () => (models ? Promise.resolve() : registry.close()); // the caller's registry is the caller's to close
  let database: Awaited<ReturnType<typeof openAndMigrate>>;
  try {
    database = await openAndMigrate(config, logger);
  } catch (e) {
    await closeRegistry();
    throw e;
  }
  try {
    const auth = new KeyAuthenticator(database.db, config.keyCacheMs, (e) => logger.warn({ err: e }, "could not update key last_used_at"), config.adminToken);
    const { requestLimit, tokenBudget, telemetry, requestLog, tracing, metrics, readinessChecks } = ops;
    const jobWatcher = createJobWatcher({ database, logger }, { fallbackMs: 2_000, pingMs: 15_000 });
    for (const p of config.plans) for (const m of Object.keys(p.models)) if (!registry.get(m)) throw new ConfigError(`plans.${p.id}.models.${m}`, "no such model is served");
    const plans = new PlanBook(database.db, config.plans.map((p) => ({ ...p, source: "file" as const })));
    await untilDatabaseAnswers("price plans", config.dbBootWaitMs, () => plans.refresh(), logger);
    const billing = new CreditEngine({ db: database.db, logger, config: config.billing, holdTtlMs: config.holdTtlMs, instanceId: config.instanceId, dataDir: config.dataDir, plans, clock });
    const blobs = createBlobStores(config.blobStore, database.db);
    const thumbnails = createThumbnails();
    return { config, database, registry, logger, auth, requestLimit, tokenBudget, telemetry, requestLog, tracing, metrics, readinessChecks, jobWatcher, billing, blobs, thumbnails };
  } catch (e) {
    await closeRegistry();
    await database.close();
    throw e;
  }
}

/**
 * The whole server. `listener`: a socket the caller already opened (main.ts listens before it
 * imports this module); otherwise it is opened here first, unless `listen` is false (tests that
 * only need the app and the background tasks).
 */
export async function startServer(config: Config, opts: { logger?: Logger; listen?: boolean; listener?: Listener; clock?: () => number } = {}): Promise<Running> {
  const logger = opts.logger ?? createLogger(config);
  // Listen before anything slow: liveness probes and clients reach the process at once, requests
  // wait at the gate until the app exists (startup-gate.ts).
  const listener = opts.listener ?? (opts.listen !== false ? listen(config, logger) : null);
  const gate = listener?.gate ?? startupGate(config.loadWaitMs);
  const server = listener?.server ?? null;
  let registry: ModelRegistry;
  try {
    await turn(); // the gate answers the probes that arrived while this module was evaluated
    registry = await buildModels(config, logger);
    await turn();
  } catch (e) {
    gate.fail(e);
    await server?.stop(true);
    throw e;
  }
  let ops: Ops | undefined;
  let deps: AppDeps;
  try {
    ops = await createOps(config, logger);
    ops.watchUpstreams(() => upstreamReport(registry));
    deps = await buildDeps(config, logger, ops, registry, opts.clock);
    // replays settlements a killed process left in its journal, before serving (a failed replay is
    // kept for the next start: only its first query, the database's identity, can throw)
    await untilDatabaseAnswers("settlement journal", config.dbBootWaitMs, () => deps.billing.start(), logger);
  } catch (e) {
    gate.fail(e);
    await server?.stop(true);
    await ops?.close();
    await registry.close();
    throw e;
  }
  const lifecycle = (deps.lifecycle = new Lifecycle());
  const app = createApp(deps);
  // the handlers' `server` (Elysia's context): the socket's, for the client address the audit log records
  app.server = server;
  gate.open(async (req) => {
    const res = await app.handle(req);
    // draining: every answer closes its connection, so keep-alive clients (a load balancer's pool)
    // open their next one elsewhere
    if (lifecycle.draining) {
      try {
        res.headers.set("connection", "close");
      } catch {}
    }
    return res;
  });
  const tasks: BackgroundTask[] = [every(config.holdSweepIntervalMs, async () => {
    const n = await sweepExpiredHolds(deps.database.db);
    if (n) logger.warn({ released: n }, "released expired holds of requests that never finished");
  }, (e) => logger.error({ err: e }, "hold sweeper failed")), ...videoBackgroundTasks(deps), ...webhookBackgroundTasks(deps), ...responsesBackgroundTasks(deps), ...fileBackgroundTasks(deps), ...batchBackgroundTasks(deps)];
  // budget thresholds reached → webhooks (at once when a batch reports some, and every poll)
  const alerts = budgetAlertTask(deps);
  deps.billing.onAlerts(alerts.kick);
  // price plans changed through another instance's admin API
  tasks.push(alerts, every(Math.max(1_000, config.keyCacheMs), () => deps.billing.plans.refresh(), (e) => logger.warn({ err: e }, "could not read the price plans again")));
  // audit-log retention: hourly, each instance (the prune is one idempotent DELETE)
  if (config.auditRetentionDays > 0) tasks.push(every(3_600_000, () => pruneAudit(deps.database.db, config.auditRetentionDays), (e) => logger.warn({ err: e }, "could not prune the audit log")));
  for (const t of tasks) t.start();
  deps.registry.preload(config.preloadModels);
  // where a person goes next: on all interfaces the server's own URL names 0.0.0.0, which a browser cannot open
  const base = server ? server.url.href.replace(/^http:\/\/(0\.0\.0\.0|\[::\])(?=:)/, "http://localhost") : null;
  logger.info({ url: server?.url.href, console: base && base + "console", docs: base && base + "docs", database: deps.database.kind, models: deps.registry.list().map((m) => m.id), preload: config.preloadModels }, "reelay ready");
  if (!config.adminToken) logger.warn("REELAY_ADMIN_TOKEN is not set: the admin API (/admin/*) and the console's operator view answer 401, so no account or API key can be created; set it (16 characters or more) and restart");

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      // 1. draining: /readyz 503 at once; work claimed from the shared queues (video job steps,
      // webhook deliveries) is handed back now for another instance, not when its lease lapses
      lifecycle.drain();
      logger.info({ drainDelayMs: config.shutdownDrainDelayMs, graceMs: config.shutdownGraceMs }, "shutting down: readyz 503, handing back queued work, then no new connections after the drain delay");
      const tasksStopped = Promise.allSettled(tasks.map((t) => t.stop()));
      // 2. still accepting for the drain delay, so a load balancer notices the 503 before connections are refused
      if (config.shutdownDrainDelayMs > 0) await Bun.sleep(config.shutdownDrainDelayMs);
      const graceEnds = performance.now() + config.shutdownGraceMs;
      // progress streams never finish on their own: end them (EventSource clients reconnect elsewhere)
      await deps.jobWatcher.close();
      // 3. no new connections; in-flight requests and streams finish up to the drain timeout
      if (server) {
        logger.info({ graceMs: config.shutdownGraceMs }, "shutting down: no new connections, finishing in-flight requests");
        const graceful = server.stop(false).then(() => "done" as const);
        const after = (ms: number) => new Promise<"timeout">((r) => setTimeout(() => r("timeout"), Math.max(0, ms)).unref());
        if ((await Promise.race([graceful, after(graceEnds - performance.now())])) === "timeout") {
          // 4. the drain timeout: open streams end with an error event (billed on what was delivered)
          logger.warn({ graceMs: config.shutdownGraceMs }, "drain timeout: ending open streams with an error event, then closing remaining connections");
          lifecycle.cut();
          if ((await Promise.race([graceful, after(CUT_MS)])) === "timeout") await server.stop(true);
        }
      }
      // the last responses' own ends (request lines, server spans) run just after they were sent
      if (!(await deps.requestLog.idle(Math.max(graceEnds - performance.now(), IDLE_MIN_MS)))) logger.warn("shutting down: some requests never reported their end; their log lines and spans are missing");
      await tasksStopped;
      await deps.billing.stop(Math.max(graceEnds - performance.now(), SETTLE_MIN_MS));
      await deps.registry.close();
      deps.thumbnails.close();
      await ops!.close();
      await deps.database.close();
      logger.info("stopped");
    })());
  return { deps, app, server, url: server ? server.url.href.replace(/\/$/, "") : null, stop };
}
