/**
 * The logger a plugin gets (ctx.logger per model, CallOptions.logger per call): the SDK's
 * msg-first shape over a pino child bound to plugin, model and, per call, requestId. A plugin's
 * fields never replace the host's: pino would write both keys and a log search would see the
 * plugin's, so a field named like one of the host's is written as `plugin_<name>`.
 */
import type { Logger } from "../logger.ts";
import type { PluginLogger } from "../plugin-sdk/index.ts";
import type { PluginSecrets } from "./secrets.ts";

const HOST_FIELDS = new Set(["plugin", "model", "requestId", "jobId", "level", "time", "msg", "pid", "hostname", "component"]);

function safeFields(fields: Record<string, unknown> | undefined, secrets: PluginSecrets | undefined): Record<string, unknown> {
  if (!fields) return {};
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(fields)) {
    const value = secrets ? secrets.redactValue(fields[key]) : fields[key];
    if (!HOST_FIELDS.has(key) && value === fields[key]) continue;
    out ??= { ...fields };
    if (HOST_FIELDS.has(key)) {
      delete out[key];
      out[`plugin_${key}`] = value;
    } else out[key] = value;
  }
  return out ?? fields;
}

/** `secrets`: values the plugin read from the environment, redacted from its messages and fields */
export function callLogger(base: Logger, bindings: { plugin: string; model: string; requestId?: string }, secrets?: PluginSecrets): PluginLogger {
  const child = base.child(bindings);
  const m = (msg: string) => (secrets ? secrets.redact(msg) : msg);
  return {
    debug: (msg, fields) => child.debug(safeFields(fields, secrets), m(msg)),
    info: (msg, fields) => child.info(safeFields(fields, secrets), m(msg)),
    warn: (msg, fields) => child.warn(safeFields(fields, secrets), m(msg)),
    error: (msg, fields) => child.error(safeFields(fields, secrets), m(msg)),
  };
}
