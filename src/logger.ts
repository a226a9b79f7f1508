/**
 * Structured logs: one JSON object per line on stdout (pino), human-readable when stdout is a
 * terminal (or REELAY_LOG_FORMAT=pretty). Secrets never reach a log line: API keys are logged by
 * their visible prefix only, and the redact list catches the usual header and option names.
 */
import pino, { type Logger as PinoLogger } from "pino";
import type { Config } from "./config.ts";

export type Logger = PinoLogger;

const REDACT = ["authorization", "headers.authorization", "req.headers.authorization", "apiKey", "api_key", "key", "password", "token", "adminToken"];

export function createLogger(opts: Pick<Config, "logLevel" | "logPretty">, destination?: NodeJS.WritableStream): Logger {
  const base = { level: opts.logLevel, base: undefined, redact: { paths: REDACT, censor: "[redacted]" }, timestamp: pino.stdTimeFunctions.isoTime };
  // pino-pretty is loaded only for a terminal (with ioredis and yaml on demand: 2 MB less idle RSS, src/rate-limit/index.ts)
  if (opts.logPretty && !destination) return pino(base, (require("pino-pretty") as typeof import("pino-pretty")).build({ colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", sync: true }));
  return pino(base, destination ?? pino.destination({ fd: 1, sync: false }));
}
