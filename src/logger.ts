/**
 * Structured logs: one JSON object per line on stdout (pino), human-readable when stdout is a
 * terminal (or REELAY_LOG_FORMAT=pretty). Secrets never reach a log line: API keys are logged by
 * their visible prefix only, and the redact list catches the usual header and option names.
 */
import { write, writeSync } from "node:fs";
import pino, { type Logger as PinoLogger } from "pino";
import type { Config } from "./config.ts";

export type Logger = PinoLogger;

const REDACT = ["authorization", "headers.authorization", "req.headers.authorization", "apiKey", "api_key", "key", "password", "token", "adminToken"];

export function createLogger(opts: Pick<Config, "logLevel" | "logPretty">, destination?: NodeJS.WritableStream): Logger {
  const base = { level: opts.logLevel, base: undefined, redact: { paths: REDACT, censor: "[redacted]" }, timestamp: pino.stdTimeFunctions.isoTime };
  // pino-pretty is loaded only for a terminal (with ioredis and yaml on demand: 2 MB less idle RSS, src/rate-limit/index.ts)
  if (opts.logPretty && !destination) return pino(base, (require("pino-pretty") as typeof import("pino-pretty")).build({ colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", sync: true }));
  return pino(base, destination ?? stdout());
}

/** stdout is one per process: every logger writes to the same one (one exit hook, lines in order) */
let shared: ReturnType<typeof stdoutLines> | undefined;
const stdout = () => (shared ??= stdoutLines(1));

/** A full pipe (a slow reader) is retried this often; at exit, for at most EXIT_FLUSH_MS in all. */
const RETRY_MS = 10;
const EXIT_FLUSH_MS = 1_000;

/**
 * stdout for log lines: written asynchronously, a turn of the event loop's lines in one write; what
 * arrives while a write is out goes in the next.
 * Not pino.destination() (sonic-boom): when stdout's reader is gone (`reelay serve | cut`, the
 * `cut` killed, then Ctrl-C) its exit hook retries a write that fails with EPIPE forever, in a
 * synchronous loop (sonic-boom 4.2 retries every error, not only EAGAIN), so the process never
 * exited and ignored every later signal. Here a write error other than a full pipe ends logging
 * for good — nobody is reading — and the exit hook writes what is left once, giving a full pipe at
 * most EXIT_FLUSH_MS. `fd` and `flushSync` are what the request log looks for to send batches.
 */
export function stdoutLines(fd: number) {
  let queued: string[] = [];
  let inFlight: Buffer | null = null;
  let broken = false;
  let drained: Array<() => void> = [];
  const done = () => {
    const waiting = drained;
    drained = [];
    for (const cb of waiting) cb();
  };
  const stop = () => {
    broken = true;
    queued = [];
    inFlight = null;
    done();
  };
  let scheduled = false;
  const sendQueued = () => {
    scheduled = false;
    next();
  };
  const next = () => {
    if (broken || inFlight || !queued.length) return;
    send(Buffer.from(queued.join("")));
    queued = [];
  };
  const send = (buf: Buffer) => {
    inFlight = buf;
    write(fd, buf, 0, buf.length, null, (err, n) => {
      if (broken) return;
      if (err) {
        if (err.code === "EAGAIN") setTimeout(() => send(buf), RETRY_MS);
        else stop();
        return;
      }
      if (n < buf.length) return send(buf.subarray(n));
      inFlight = null;
      if (queued.length) next();
      else done();
    });
  };
  const flushSync = () => {
    // a write in flight is not sent again: at exit it has almost always been written, and a line
    // twice would be worse than the rare line lost (pino's own destination does the same)
    let rest = Buffer.from(queued.join(""));
    queued = [];
    const until = Date.now() + EXIT_FLUSH_MS;
    while (rest.length && !broken) {
      try {
        rest = rest.subarray(writeSync(fd, rest));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EAGAIN" || Date.now() > until) return stop();
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
      }
    }
    inFlight = null;
  };
  process.once("exit", flushSync);
  return {
    fd,
    write(line: string) {
      if (broken) return true;
      queued.push(line);
      // the lines of one turn of the event loop go out in one write (1,000 video jobs finishing
      // together logged ~5,000 lines, one write(2) each: 8 % of the server's busy time)
      if (!inFlight && !scheduled) (scheduled = true), setImmediate(sendQueued);
      return true;
    },
    /** `cb` once everything written so far is out (or can never be) */
    flush(cb?: () => void) {
      if (!cb) return;
      if (broken || (!inFlight && !queued.length)) cb();
      else drained.push(cb);
    },
    flushSync,
  };
}

/**
 * A CLI command's log lines on `fd` (stderr, or stdout for `reelay migrate`), each written before
 * the call returns: the command ends with process.exit, which does not wait for a stream's pending
 * writes (CI lost the audit line of a grant, and all of `reelay migrate`'s "migrations applied"
 * lines). A write that fails (nobody reading) is dropped: a log line must not fail the command.
 */
export function syncLines(fd: 1 | 2): NodeJS.WritableStream {
  return {
    write(line: string): boolean {
      try {
        let buf = Buffer.from(line);
        while (buf.length) buf = buf.subarray(writeSync(fd, buf));
      } catch {
        // EPIPE / EAGAIN: the line is lost, the command goes on
      }
      return true;
    },
  } as unknown as NodeJS.WritableStream;
}
