/**
 * Operations wiring (issue 8): rate limits, metrics, request logs, admin usage views.
 * `createOps` is called once at boot; its parts are plugged into the deps and the app.
 */
import { Elysia } from "elysia";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { AppDeps } from "../deps.ts";
import type { ReadinessCheck } from "../modules/health/index.ts";
import { noTelemetry, noTokenBudget, type Telemetry, type TokenBudget } from "./hooks.ts";

export interface Ops {
  tokenBudget: TokenBudget;
  telemetry: Telemetry;
  /** global request hooks (request-rate limit, request log, request metrics), used first by createApp */
  requestHooks(deps: AppDeps): Elysia<any, any, any, any, any, any, any>;
  /** extra routes (/metrics, /admin/usage …) */
  routes(deps: AppDeps): Elysia<any, any, any, any, any, any, any>[];
  readinessChecks: ReadinessCheck[];
  close(): Promise<void>;
}

export async function createOps(config: Config, logger: Logger): Promise<Ops> {
  return {
    tokenBudget: noTokenBudget,
    telemetry: noTelemetry,
    requestHooks: () => new Elysia(),
    routes: () => [],
    readinessChecks: [],
    close: async () => {},
  };
}
