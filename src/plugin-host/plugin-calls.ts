/** The CallOptions each plugin call gets: the caller's signal and request id, and a logger bound to both. */
import type { CallOptions, PluginLogger } from "../plugin-sdk/index.ts";
import { callLogger } from "./call-logger.ts";
import type { PluginSite } from "./plugin-faults.ts";
import type { HostCall } from "./types.ts";

export class PluginCalls {
  constructor(private readonly site: PluginSite) {}

  options(call: HostCall): CallOptions {
    const site = this.site;
    let logger: PluginLogger | undefined;
    return {
      signal: call.signal,
      requestId: call.requestId,
      routed: call.routed,
      // made on first use: a pino child per request costs a few µs that most calls never need
      get logger() {
        return (logger ??= callLogger(site.logger, { plugin: site.plugin, model: site.model, requestId: call.requestId }, site.secrets));
      },
    };
  }
}
