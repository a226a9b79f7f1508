import type { BlobStores } from "./blob-store/index.ts";
import type { KeyAuthenticator } from "./auth/authenticate-key.ts";
import type { CreditEngine } from "./billing/engine.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/index.ts";
import type { Logger } from "./logger.ts";
import type { JobWatcher } from "./modules/videos/job-watcher.ts";
import type { Thumbnails } from "./modules/videos/thumbnails.ts";
import type { ModelRegistry } from "./registry/model-registry.ts";
import type { OpsParts } from "./ops/hooks.ts";
import type { Lifecycle } from "./lifecycle.ts";

/**
 * Everything a route module may use; built once by boot (or by a test) and passed in. The ops parts
 * (request and token limits, telemetry, the request log, /metrics, readiness checks) come from
 * createOps, or the no-op defaults of ops/hooks.ts.
 */
export interface AppDeps extends OpsParts {
  config: Config;
  database: Database;
  registry: ModelRegistry;
  logger: Logger;
  auth: KeyAuthenticator;
  /** shared by every open progress stream (GET /v1/videos/generations/{id}/events) */
  jobWatcher: JobWatcher;
  /** approves and settles requests' credits (src/billing/engine.ts) */
  billing: CreditEngine;
  /** where video results, thumbnails and source images live (REELAY_BLOB_STORE) */
  blobs: BlobStores;
  /** thumbnails of videos made elsewhere, made on worker threads when first asked for */
  thumbnails: Thumbnails;
  /** shutdown state: draining (readyz 503) and the drain timeout's cut of open streams (src/lifecycle.ts); absent in tests that build deps by hand */
  lifecycle?: Lifecycle;
}
