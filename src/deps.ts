import type { KeyAuthenticator } from "./auth/authenticate-key.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/index.ts";
import type { Logger } from "./logger.ts";
import type { ModelRegistry } from "./registry/model-registry.ts";
import type { Telemetry, TokenBudget } from "./ops/hooks.ts";

/** Everything a route module may use; built once in main.ts (or by a test) and passed in. */
export interface AppDeps {
  config: Config;
  database: Database;
  registry: ModelRegistry;
  logger: Logger;
  auth: KeyAuthenticator;
  /** tokens-per-minute limits (no-op unless the ops module provides one) */
  tokenBudget: TokenBudget;
  /** metrics hooks (no-op unless the ops module provides them) */
  telemetry: Telemetry;
}
