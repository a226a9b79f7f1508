/**
 * What the host makes of a plugin that misbehaves, in one place: a result that breaks the SDK's
 * contract (a violation) and a thrown value that is not a PluginError (a crash). Both become
 * branded PluginErrors of kind `failed`, not retryable, so every route and the video scheduler treat
 * them like any other final failure: 502 (or a failed job), nothing charged, the hold given back at
 * once. Both are logged here, once, naming the plugin, the model and the request.
 */
import type { Logger } from "../logger.ts";
import { isPluginError, PluginError } from "../plugin-sdk/index.ts";
import type { PluginSecrets } from "./secrets.ts";

export interface PluginSite {
  plugin: string;
  model: string;
  logger: Logger;
  /** what the plugin read from the environment: redacted from everything relayed or logged */
  secrets?: PluginSecrets;
}

export const VIOLATION_CODE = "invalid_plugin_result";
export const CRASH_CODE = "plugin_failed";

/** The plugin returned something the SDK's types and checks.ts rule out. */
export function violation(site: PluginSite, problem: string, requestId?: string): PluginError {
  site.logger.error({ plugin: site.plugin, model: site.model, requestId, problem }, "plugin returned an invalid result");
  return new PluginError("failed", `Plugin "${site.plugin}" (model "${site.model}") returned an invalid result: ${problem}.`, { code: VIOLATION_CODE, retryable: false });
}

/**
 * What to rethrow for `err` from a plugin call: PluginErrors and the caller's own abort pass as they
 * are; anything else is a crash. Its text stays in the log (a stack may hold paths or an upstream
 * URL with credentials); the client learns which plugin failed and that the operator has details.
 */
export function fromPluginThrow(site: PluginSite, err: unknown, signal: AbortSignal, requestId?: string): unknown {
  if (signal.aborted) return err;
  if (isPluginError(err)) return redacted(site, err);
  site.logger.error({ plugin: site.plugin, model: site.model, requestId, err: site.secrets ? site.secrets.redactValue(err) : err }, "plugin threw an error that is not a PluginError (a bug in the plugin)");
  return new PluginError("failed", `The model's plugin (plugin "${site.plugin}", model "${site.model}") failed unexpectedly; the operator's log has the details.`, {
    code: CRASH_CODE,
    retryable: false,
    cause: err,
  });
}

/** Run one plugin call, turning what it throws into what the host may see. */
export async function guarded<T>(site: PluginSite, signal: AbortSignal, requestId: string | undefined, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw fromPluginThrow(site, err, signal, requestId);
  }
}

/** A PluginError whose message quotes a secret of its plugin (an upstream echoing its key): the same error, the secret masked. */
function redacted(site: PluginSite, err: PluginError): PluginError {
  const message = site.secrets ? site.secrets.redact(err.message) : err.message;
  if (message === err.message) return err;
  return new PluginError(err.kind, message, { status: err.status, code: err.code, param: err.param, retryable: err.retryable, retryAfterSeconds: err.retryAfterSeconds });
}
