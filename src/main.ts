#!/usr/bin/env bun
/**
 * The reelay program: `reelay serve` (default) runs the API; other subcommands administer the
 * database with the same configuration (see `reelay help`).
 *
 * Only the config, logger and listener modules are imported up front: `serve` opens its port and
 * then imports the rest (boot.ts: the app, database drivers, plugins), so /healthz answers while
 * that is evaluated and the database opens.
 */
import { loadConfig } from "./config.ts";
import { ApiError, ConfigError } from "./errors.ts";
import { listen } from "./listen.ts";
import { createLogger, syncLines } from "./logger.ts";

const help = async () => {
  const { COMMANDS } = await import("./cli/commands.ts");
  return `reelay — image-to-video, chat and embeddings API with credit billing

usage: reelay [command]

  serve                 run the API server (default)
  healthcheck           exit 0 if the server on PORT answers /readyz with 200 (for container health checks)
  migrate               apply database migrations and exit
  migrate --check       print the migrations this binary would apply; exit 1 if there are any
  backup <dir>          copy the database into <dir>: pg_dump for PostgreSQL, a consistent copy of the
                        PGlite data directory (through the running server's admin API when it runs)
${Object.values(COMMANDS).map((c) => "  " + c.usage).join("\n")}
  help                  this text

Money is in integer micro-dollars (1 USD = 1000000). Configuration: environment variables (see docs/configuration.md).`;
};

async function main(argv: string[]): Promise<number> {
  const command = argv[0] ?? "serve";
  if (command === "help" || command === "--help" || command === "-h") {
    console.log(await help());
    return 0;
  }
  const config = loadConfig();
  if (command === "healthcheck") {
    // the container images have no curl: the binary checks its own server
    const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
    const res = await fetch(`http://${host.includes(":") ? `[${host}]` : host}:${config.port}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
    console.log(res ? `readyz ${res.status}` : "no answer");
    return res?.status === 200 ? 0 : 1;
  }
  if (command === "serve") {
    const logger = createLogger(config);
    const listener = listen(config, logger);
    const { startServer, SHUTDOWN_CLOSE_MS } = await import("./boot.ts");
    const running = await startServer(config, { logger, listener });
    let signals = 0;
    const onSignal = (sig: string) => {
      if (++signals > 1) process.exit(1);
      logger.info({ signal: sig }, "signal received");
      // exit once the last lines are written (a line whose asynchronous write is still in flight at
      // exit is lost), or after a second at most: a reader that stopped reading cannot hold the exit
      const exit = (code: number) => {
        setTimeout(() => process.exit(code), 1_000);
        logger.flush(() => process.exit(code));
      };
      // a stop that does not finish (a step that never returns) ends all the same
      const giveUpMs = config.shutdownDrainDelayMs + config.shutdownGraceMs + SHUTDOWN_CLOSE_MS;
      setTimeout(() => {
        logger.error({ afterMs: giveUpMs }, "shutdown did not finish in the grace period and the time to close after it: exiting without it");
        exit(1);
      }, giveUpMs);
      running.stop().then(() => exit(0), (e) => {
        logger.error({ err: e }, "shutdown failed");
        exit(1);
      });
    };
    process.on("SIGTERM", () => onSignal("SIGTERM"));
    process.on("SIGINT", () => onSignal("SIGINT"));
    return -1; // keep running
  }
  // stderr written synchronously: a command ends with process.exit, and its audit log lines
  // (src/audit/audit-log.ts) written through the stream before it were sometimes lost
  const logger = createLogger({ ...config, logLevel: "warn", logPretty: false }, syncLines(2));
  if (command === "migrate" && argv.includes("--check")) {
    const { checkMigrations } = await import("./boot.ts");
    const pending = await checkMigrations(config);
    console.log(JSON.stringify({ pending, database: config.databaseUrl ? "postgres" : "pglite" }));
    return pending.length ? 1 : 0;
  }
  if (command === "backup") {
    const { backup } = await import("./cli/backup.ts");
    console.log(JSON.stringify(await backup(config, argv[1])));
    return 0;
  }
  if (command === "migrate") {
    const { openAndMigrate } = await import("./boot.ts");
    // its log lines on stdout as they are written (pino-pretty's terminal output is synchronous too)
    const database = await openAndMigrate({ ...config }, createLogger(config, config.logPretty ? undefined : syncLines(1)));
    await database.close();
    console.log(JSON.stringify({ migrated: true, database: config.databaseUrl ? "postgres" : "pglite" }));
    return 0;
  }
  const { runCommand } = await import("./cli/commands.ts");
  return runCommand(config, logger, argv);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  async (e) => {
    const usage = (e as Error)?.name === "UsageError";
    if (usage) console.error(`reelay: ${e.message}\n\n${await help()}`);
    else if (e instanceof ConfigError) console.error(`reelay: ${e.message}`);
    else if (e instanceof ApiError) console.error(`reelay: ${e.message}`);
    else console.error(`reelay: ${(e as Error)?.message ?? e}`);
    process.exit(usage ? 2 : 1);
  },
);
