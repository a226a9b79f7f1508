/** The CallOptions each plugin call gets: the caller's signal and request id, a logger bound to both, and a messages call's client headers. */
import type { CallOptions, MessagesCallOptions, PluginLogger } from "../plugin-sdk/index.ts";
import { callLogger } from "./call-logger.ts";
import type { PluginSite } from "./plugin-faults.ts";
import type { HostCall, HostMessagesCall } from "./types.ts";

export class PluginCalls {
  constructor(private readonly site: PluginSite) {}

  options(call: HostCall & Pick<HostMessagesCall, "anthropicVersion" | "anthropicBeta">): CallOptions & Pick<MessagesCallOptions, "anthropicVersion" | "anthropicBeta"> {
    const site = this.site;
    let logger: PluginLogger | undefined;
    return {
      signal: call.signal,
      requestId: call.requestId,
      routed: call.routed,
      trace: call.trace,
      // a messages call's client headers (undefined on every other call)
      anthropicVersion: call.anthropicVersion,
      anthropicBeta: call.anthropicBeta,
      // made on first use: a pino child per request costs a few µs that most calls never need
      get logger() {
        return (logger ??= callLogger(site.logger, { plugin: site.plugin, model: site.model, requestId: call.requestId }, site.secrets));
      },
    };
  }
}
