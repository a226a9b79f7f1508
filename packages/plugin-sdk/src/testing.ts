/**
 * A PluginContext and CallOptions for a plugin's own tests, outside reelay: a logger that records
 * lines, env vars you pass, plain fetch, a size- and time-limited download with the host's error
 * codes (but NOT its address check: tests talk to fakes on loopback; inside reelay private
 * addresses are refused unless the operator allows them), and a token counter of ~4 characters per
 * token. decodeImage and encodeMp4 are reelay's: pass `host` with your own to test code using them.
 */
import type { MessagesCallOptions, PluginLogger } from "./capabilities.ts";
import type { TSchema } from "@sinclair/typebox";
import { checkOptions } from "./option-check.ts";
import type { HostServices, PluginContext, ReelayPlugin } from "./plugin.ts";
import { readBodyCapped, SafeFetchError, type SafeFetchOptions } from "./safe-fetch.ts";

export interface LogLine {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields?: Record<string, unknown>;
}

export interface RecordingLogger extends PluginLogger {
  lines: LogLine[];
}

export function recordingLogger(): RecordingLogger {
  const lines: LogLine[] = [];
  const log = (level: LogLine["level"]) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { lines, debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

export type TestContextOverrides = Partial<Omit<PluginContext, "host">> & {
  envVars?: Record<string, string>;
  host?: Partial<HostServices>;
  /** check `options` against this plugin's schema and fill in its defaults, as the host does (throws on a problem) */
  plugin?: ReelayPlugin;
};

export function testPluginContext(options: Record<string, unknown> = {}, overrides: TestContextOverrides = {}): PluginContext<any> & { logs: LogLine[] } {
  const logger = recordingLogger();
  const { envVars = {}, host, plugin, ...rest } = overrides;
  if (plugin?.options) {
    const checked = checkOptions(plugin.options as TSchema, options);
    if (checked.problems.length) throw new Error(`options for ${plugin.name}: ${checked.problems.map((p) => `${p.option || "options"}: ${p.message}`).join("; ")}`);
    options = checked.options;
  }
  const unavailable = (what: string) => () => {
    throw new Error(`ctx.host.${what} is reelay's; the standalone test context has none: pass { host: { ${what} } }`);
  };
  return {
    modelId: "test-model",
    options,
    model: { pricing: {} },
    logger,
    env: (name) => envVars[name],
    fetch: globalThis.fetch,
    safeFetchBytes: fetchBytes,
    ...rest,
    host: { decodeImage: unavailable("decodeImage"), encodeMp4: unavailable("encodeMp4"), countTokens: (t) => Math.ceil(t.length / 4), ...host },
    logs: logger.lines,
  };
}

/** CallOptions for one call: a fresh signal (or yours), a request id, a recording logger (and, for a messages call, the client's anthropic-version / anthropic-beta if you give them). */
export function testCall(over: Partial<MessagesCallOptions> = {}): MessagesCallOptions & { logs: LogLine[] } {
  const logger = recordingLogger();
  return { signal: new AbortController().signal, requestId: `req_test_${crypto.randomUUID().slice(0, 8)}`, logger, ...over, logs: logger.lines };
}

/** The host's download minus its address check (see above). */
export async function fetchBytes(url: string, opts: SafeFetchOptions): Promise<{ bytes: Uint8Array; contentType: string | null }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SafeFetchError("invalid_url", "not a valid URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new SafeFetchError("invalid_url", `scheme ${parsed.protocol} is not allowed (http and https only)`);
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  let res: Response;
  try {
    res = await fetch(parsed, { headers: opts.headers, signal });
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      throw new SafeFetchError("http_status", `${parsed.host} answered HTTP ${res.status}`, { status: res.status });
    }
    const bytes = await readBodyCapped(res, opts.maxBytes, () => new SafeFetchError("too_large", `${parsed.host} sent more than ${opts.maxBytes} bytes`));
    return { bytes, contentType: res.headers.get("content-type") };
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (deadline.aborted) throw new SafeFetchError("timeout", `download did not finish within ${opts.timeoutMs} ms`, { cause: err });
    if (err instanceof SafeFetchError) throw err;
    throw new SafeFetchError("network", `download failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}
