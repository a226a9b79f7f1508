/**
 * A PluginContext for tests, built like the host builds one (real host services and the real
 * SSRF-guarded download), with a logger that records lines so tests can check what was logged.
 * Not part of what an external plugin bundles: import it from tests only.
 */
import { hostServices, safeFetchBytes } from "../registry/host-services.ts";
import type { PluginContext } from "./index.ts";

export interface LogLine {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields?: Record<string, unknown>;
}

export function testPluginContext(options: Record<string, unknown> = {}, overrides: Partial<PluginContext> & { envVars?: Record<string, string> } = {}): PluginContext & { logs: LogLine[] } {
  const logs: LogLine[] = [];
  const log = (level: LogLine["level"]) => (msg: string, fields?: Record<string, unknown>) => void logs.push({ level, msg, fields });
  const { envVars = {}, ...rest } = overrides;
  return {
    modelId: "test-model",
    options,
    model: { pricing: {} },
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    env: (name) => envVars[name],
    fetch: globalThis.fetch,
    safeFetchBytes,
    host: hostServices(),
    ...rest,
    logs,
  };
}
