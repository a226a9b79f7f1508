/**
 * Boot: config -> logger -> database (+ migrations) -> plugins -> model registry -> app -> listen,
 * plus background tasks. Shutdown reverses it: stop accepting, finish in-flight requests, stop
 * background work, close plugins and the database.
 */
import type { Server } from "bun";
import { createApp } from "./app.ts";
import { KeyAuthenticator } from "./auth/authenticate-key.ts";
import { every, type BackgroundTask } from "./background.ts";
import { sweepExpiredHolds } from "./billing/index.ts";
import type { Config } from "./config.ts";
import { migrate, openDatabase } from "./db/index.ts";
import type { AppDeps } from "./deps.ts";
import { createLogger, type Logger } from "./logger.ts";
import { buildRegistry, resolveModelList } from "./registry/model-registry.ts";
import { contextFactory } from "./registry/plugin-context.ts";
import { describeModel } from "./registry/describe-model.ts";
import { builtinPlugins } from "./registry/builtin-plugins.ts";
import { hostServices, safeFetchBytes } from "./registry/host-services.ts";
import { loadExternalPlugins } from "./registry/load-external-plugins.ts";
import { lockDataDir } from "./db/data-dir-lock.ts";
import { noOps, type OpsParts } from "./ops/hooks.ts";
import { createOps } from "./ops/index.ts";
import { videoBackgroundTasks } from "./modules/videos/index.ts";

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
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const applied = await migrate(database.db);
  if (applied.length) logger.info({ applied, database: database.kind }, "migrations applied");
  const close = database.close;
  database.close = async () => {
    await close();
    unlock();
  };
  return database;
}

/** The app's dependencies; `ops` defaults to the no-op parts (no limits, logs or metrics). */
export async function buildDeps(config: Config, logger: Logger = createLogger(config), ops: OpsParts = noOps): Promise<AppDeps> {
  const database = await openAndMigrate(config, logger);
  try {
    const external = await loadExternalPlugins(config.pluginsDir, logger);
    const plugins = new Map([...builtinPlugins, ...external].map((p) => [p.name, p]));
    if (plugins.size !== builtinPlugins.length + external.length) {
      const names = [...builtinPlugins, ...external].map((p) => p.name);
      const dup = names.find((n, i) => names.indexOf(n) !== i);
      throw new Error(`two plugins are named "${dup}"`);
    }
    const models = resolveModelList(config.models, builtinPlugins, external, config.builtinModels);
    const registry = await buildRegistry(models, plugins, contextFactory({ logger, env: process.env, safeFetchBytes, host: hostServices() }));
    for (const m of registry.list()) logger.info(describeModel(m), "model served");
    const auth = new KeyAuthenticator(database.db, config.keyCacheMs, (e) => logger.warn({ err: e }, "could not update key last_used_at"));
    const { requestLimit, tokenBudget, telemetry, requestLog, metrics, readinessChecks } = ops;
    return { config, database, registry, logger, auth, requestLimit, tokenBudget, telemetry, requestLog, metrics, readinessChecks };
  } catch (e) {
    await database.close();
    throw e;
  }
}

export async function startServer(config: Config, opts: { logger?: Logger; listen?: boolean } = {}): Promise<Running> {
  const logger = opts.logger ?? createLogger(config);
  const ops = await createOps(config, logger);
  const deps = await buildDeps(config, logger, ops);
  const app = createApp(deps);
  const tasks: BackgroundTask[] = [every(config.holdSweepIntervalMs, async () => {
    const n = await sweepExpiredHolds(deps.database.db);
    if (n) logger.warn({ released: n }, "released expired holds of requests that never finished");
  }, (e) => logger.error({ err: e }, "hold sweeper failed")), ...videoBackgroundTasks(deps)];
  for (const t of tasks) t.start();

  let server: Server<unknown> | null = null;
  if (opts.listen !== false) {
    server = Bun.serve({
      hostname: config.host,
      port: config.port,
      // backstop only: createApp answers oversized bodies with a 413 envelope before reading them
      maxRequestBodySize: config.maxBodyBytes + 1024 * 1024,
      idleTimeout: 255,
      fetch: (req) => app.handle(req),
    });
    logger.info({ url: server.url.href, pid: process.pid, database: deps.database.kind, models: deps.registry.list().map((m) => m.id) }, "reelay listening");
  }

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info("shutting down: no new connections, finishing in-flight requests");
      if (server) {
        const graceful = server.stop(false);
        const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), config.shutdownGraceMs).unref());
        if ((await Promise.race([graceful.then(() => "done" as const), timeout])) === "timeout") {
          logger.warn({ graceMs: config.shutdownGraceMs }, "grace period over: closing remaining connections");
          await server.stop(true);
        }
      }
      await Promise.allSettled(tasks.map((t) => t.stop()));
      await deps.registry.close();
      await ops.close();
      await deps.database.close();
      logger.info("stopped");
    })());
  return { deps, app, server, url: server ? server.url.href.replace(/\/$/, "") : null, stop };
}
