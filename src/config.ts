/**
 * Configuration, read once at boot from the environment plus an optional models file
 * (REELAY_MODELS_FILE, JSON or YAML). Invalid values stop the boot with a ConfigError naming the key.
 * The result is a plain object passed to everything that needs it. The one later reader of the
 * environment is the plugins' context (`ctx.env`, handed process.env by boot.ts): a model's options
 * name the variable that holds its secret (`api_key_env`), so secrets stay out of the models file.
 */
import { dirname, resolve } from "node:path";
import ipaddr from "ipaddr.js";
import type { ModelPricing } from "./plugin-sdk/index.ts";
import { ConfigError } from "./errors.ts";
import { loadModelsFile, type PlanConfig } from "./models-file.ts";
import { blobStoreConfig, type BlobStoreConfig } from "./config/blob-store.ts";
import { bool, int, str, type Env } from "./config/env.ts";
import { oidcConfig, type OidcConfig } from "./config/oidc.ts";
import { tracingConfig, type TracingConfig } from "./config/tracing.ts";

export type { BlobStoreConfig, S3Config } from "./config/blob-store.ts";
export type { OidcConfig } from "./config/oidc.ts";
export type { TracingConfig } from "./config/tracing.ts";

/** The credit engine's settings (billing/engine.ts), from REELAY_BILLING_* and REELAY_LEASE_* */
export interface BillingConfig {
  /** approve from credit leases (false: an exact hold per request; settlements are still batched) */
  leases: boolean;
  /** longest a settlement waits to be batched, ms */
  flushMs: number;
  /** a lease the owner stops renewing is swept after this, ms */
  leaseTtlMs: number;
  /** a lease reserves about this long of the account's recent worst-case spend on this instance, ms */
  leaseDemandMs: number;
  /** recent requests (this one included) that make an account warm enough for a lease (default 3) */
  leaseWarmRequests?: number;
  /** a lease takes at most this share of the account's available credit, per mille */
  leaseSharePermille: number;
  /** approvals from a lease continue at most this long without a successful database statement, ms */
  offlineMs: number;
  /** a request that finds the account short waits at most this long for other instances to give leased credit back, ms */
  reclaimWaitMs: number;
  /** keep a local journal of settlements not yet in the database (survives kill -9) */
  journal: boolean;
}

export interface ModelConfig {
  id: string;
  plugin: string;
  options: Record<string, unknown>;
  pricing: ModelPricing;
  maxOutputTokens?: number;
  contextLength?: number;
  ownedBy?: string;
  /** shown in GET /v1/models */
  description?: string;
  /** video: result URLs the plugin returns may point at private / loopback addresses (the operator's GPU network); default false */
  allowPrivateNetwork?: boolean;
  /** chat / embeddings: models tried in order when this one's upstreams all fail before any output (billed at the serving model's prices) */
  fallbacks?: string[];
  /** video: narrows the sizes the plugin declares (each must be one of them) */
  sizes?: string[];
  /** video: narrows the clip lengths (whole seconds) the plugin declares */
  seconds?: number[];
  /** other names clients may ask for this model by (agents hard-code model names); usage rows and answers carry `id` */
  aliases?: string[];
}

export interface RateLimitDefaults {
  requestsPerMinute: number;
  tokensPerMinute: number;
  concurrentVideoJobs: number;
}

export interface Config {
  host: string;
  port: number;
  databaseUrl: string | null;
  /** PostgreSQL connections this instance may open at most (its pool); the sum over instances must stay under the server's max_connections */
  dbPoolSize: number;
  /** at boot, how long reelay tries again while the database cannot be reached before it exits */
  dbBootWaitMs: number;
  dataDir: string;
  redisUrl: string | null;
  adminToken: string | null;
  metricsToken: string | null;
  /** audit-log entries older than this many days are pruned (hourly); 0: kept for ever */
  auditRetentionDays: number;
  /** OpenID Connect sign-in for the console (null: off) */
  oidc: OidcConfig | null;
  logLevel: "debug" | "info" | "warn" | "error";
  logPretty: boolean;
  modelsFile: string | null;
  /** the models file's list (null: no file) */
  models: ModelConfig[] | null;
  /** serve the built-in plugins' models beside the file's (a file says `builtins: false` to drop them) */
  builtinModels: boolean;
  /** price plans of the models file (`plans:`); more are defined through the admin API */
  plans: PlanConfig[];
  pluginsDir: string;
  keyCacheMs: number;
  holdTtlMs: number;
  holdSweepIntervalMs: number;
  maxBodyBytes: number;
  maxImageBytes: number;
  videoRetentionMs: number;
  /** POST /v1/responses keeps responses (OpenAI's default `store: true`); false: stateless, `store: true` and `previous_response_id` are refused */
  responsesStore: boolean;
  /** how long a stored response (and the conversation ending in it) is kept */
  responsesRetentionMs: number;
  /** a Messages API stream (Anthropic's format) quiet this long gets a `ping` event, as Anthropic's own streams do */
  streamPingMs: number;
  schedulerPollMs: number;
  schedulerLeaseMs: number;
  /** POST /v1/files: the largest upload, counted as the bytes arrive (REELAY_FILES_MAX_BYTES) */
  filesMaxBytes: number;
  /** uploaded files are deleted this long after upload (REELAY_FILES_TTL_SECONDS); batch output files too */
  filesTtlMs: number;
  /** the percentage of a deployment's concurrency (and of the batch scheduler's slots) batch lines may use: live requests keep the rest */
  batchShare: number;
  /** batch lines one instance has in their upstream call at once, over all batches, before the share applies (REELAY_BATCH_CONCURRENCY) */
  batchConcurrency: number;
  /** lines per claimed slice of a batch */
  batchSliceLines: number;
  instanceId: string;
  shutdownGraceMs: number;
  /** on SIGTERM: how long /readyz says 503 while requests are still accepted, before the listener closes */
  shutdownDrainDelayMs: number;
  /** models loaded in the background right after start; the others load on their first request */
  preloadModels: string[] | "all";
  /** how long a request waits for the server or its model to finish loading before a 503 */
  loadWaitMs: number;
  /** a loaded model without a call for this long is unloaded (it loads again on demand); 0: never */
  modelIdleMs: number;
  rateLimits: RateLimitDefaults;
  /** REELAY_CORS_ORIGINS: `*` (default), a list of origins, or null (`none`: no CORS headers); see src/http/cors.ts */
  corsOrigins: CorsOrigins;
  /** origin clients reach reelay at; links in webhooks and events are built from it (null: the submit request's origin) */
  publicUrl: string | null;
  /** operator secret that encrypts webhook signing secrets at rest (null: a key file in dataDir under PGlite, webhooks off under Postgres) */
  secretKey: string | null;
  webhooks: WebhookConfig;
  billing: BillingConfig;
  /** where video results, thumbnails and uploaded images are kept (src/blob-store/) */
  blobStore: BlobStoreConfig;
  /** OpenTelemetry traces (OTEL_* variables; docs/tracing.md); null: off, nothing traced */
  tracing: TracingConfig | null;
}

export interface WebhookConfig {
  /** CIDRs webhook URLs may point into besides public addresses (default none: loopback/private refused) */
  allowedNetworks: string[];
  /** per-attempt timeout */
  timeoutMs: number;
  /** first retry after about this long, doubling per attempt (with jitter) up to retryMaxMs */
  retryBaseMs: number;
  retryMaxMs: number;
  /** no attempt is scheduled later than this after the event */
  retryWindowMs: number;
  /** deliveries in flight per instance */
  concurrency: number;
  /** how often the worker looks for due deliveries when no notification woke it */
  pollMs: number;
}

/** Directory of the running program: beside the compiled binary, or the project root under `bun`. */
export function programDir(): string {
  const exe = process.execPath;
  const isCompiled = !/\/bun(-\w+)?$/.test(exe) && !exe.endsWith("/node");
  return isCompiled ? dirname(exe) : process.cwd();
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = (str(env, "REELAY_LOG_LEVEL") ?? "info") as Config["logLevel"];
  if (!["debug", "info", "warn", "error"].includes(logLevel)) throw new ConfigError("REELAY_LOG_LEVEL", `must be one of debug, info, warn, error`);
  const databaseUrl = str(env, "DATABASE_URL");
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError("DATABASE_URL", "must start with postgres:// or postgresql://");
  const redisUrl = str(env, "REDIS_URL");
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError("REDIS_URL", "must start with redis:// or rediss://");
  const adminToken = str(env, "REELAY_ADMIN_TOKEN");
  if (adminToken && adminToken.length < 16) throw new ConfigError("REELAY_ADMIN_TOKEN", "must be at least 16 characters");
  const modelsFile = str(env, "REELAY_MODELS_FILE");
  const file = modelsFile ? loadModelsFile(modelsFile) : null;
  const prettyEnv = str(env, "REELAY_LOG_FORMAT");
  if (prettyEnv && !["json", "pretty"].includes(prettyEnv)) throw new ConfigError("REELAY_LOG_FORMAT", "must be json or pretty");

  let corsOrigins: CorsOrigins;
  try {
    corsOrigins = parseCorsOrigins(str(env, "REELAY_CORS_ORIGINS"));
  } catch (e) {
    throw new ConfigError("REELAY_CORS_ORIGINS", (e as Error).message);
  }

  return {
    corsOrigins,
    host: str(env, "HOST") ?? "0.0.0.0",
    port: int(env, "PORT", 8080, 0, 65535),
    databaseUrl,
    dbPoolSize: int(env, "REELAY_DB_POOL_SIZE", 20, 2, 1_000),
    dbBootWaitMs: int(env, "REELAY_DB_BOOT_WAIT_SECONDS", 30, 0, 3_600) * 1000,
    dataDir: resolve(str(env, "REELAY_DATA_DIR") ?? "./data"),
    redisUrl,
    adminToken,
    metricsToken: str(env, "REELAY_METRICS_TOKEN"),
    auditRetentionDays: int(env, "REELAY_AUDIT_RETENTION_DAYS", 400, 0, 36_500),
    oidc: oidcConfig(env),
    logLevel,
    logPretty: prettyEnv ? prettyEnv === "pretty" : Boolean(process.stdout.isTTY),
    modelsFile,
    models: file?.models ?? null,
    builtinModels: file?.builtins ?? true,
    plans: file?.plans ?? [],
    pluginsDir: resolve(str(env, "REELAY_PLUGINS_DIR") ?? resolve(programDir(), "plugins")),
    keyCacheMs: int(env, "REELAY_KEY_CACHE_MS", 5_000, 0, 60_000),
    holdTtlMs: int(env, "REELAY_HOLD_TTL_SECONDS", 900, 1, 86_400) * 1000,
    holdSweepIntervalMs: int(env, "REELAY_HOLD_SWEEP_MS", 15_000, 100, 3_600_000),
    maxBodyBytes: int(env, "REELAY_MAX_BODY_BYTES", 16 * 1024 * 1024, 1024),
    maxImageBytes: int(env, "REELAY_MAX_IMAGE_BYTES", 10 * 1024 * 1024, 1024),
    videoRetentionMs: int(env, "REELAY_VIDEO_RETENTION_SECONDS", 1800, 1) * 1000,
    responsesStore: bool(env, "REELAY_RESPONSES_STORE", true),
    responsesRetentionMs: int(env, "REELAY_RESPONSES_RETENTION_SECONDS", 30 * 86_400, 1, 365 * 86_400) * 1000,
    streamPingMs: int(env, "REELAY_STREAM_PING_MS", 10_000, 100, 600_000),
    schedulerPollMs: int(env, "REELAY_SCHEDULER_POLL_MS", 500, 10, 60_000),
    schedulerLeaseMs: int(env, "REELAY_SCHEDULER_LEASE_MS", 30_000, 1000, 3_600_000),
    filesMaxBytes: int(env, "REELAY_FILES_MAX_BYTES", 200 * 1024 * 1024, 1),
    filesTtlMs: int(env, "REELAY_FILES_TTL_SECONDS", 30 * 86_400, 1, 3650 * 86_400) * 1000,
    batchShare: int(env, "REELAY_BATCH_SHARE", 50, 1, 100),
    batchConcurrency: int(env, "REELAY_BATCH_CONCURRENCY", 16, 1, 4096),
    batchSliceLines: int(env, "REELAY_BATCH_SLICE_LINES", 100, 1, 100_000),
    instanceId: str(env, "REELAY_INSTANCE_ID") ?? `${process.pid}-${crypto.randomUUID().slice(0, 8)}`,
    shutdownGraceMs: int(env, "REELAY_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    shutdownDrainDelayMs: int(env, "REELAY_SHUTDOWN_DRAIN_DELAY_MS", 0, 0, 600_000),
    preloadModels: preloadList(str(env, "REELAY_PRELOAD_MODELS")),
    loadWaitMs: int(env, "REELAY_LOAD_WAIT_SECONDS", 30, 1, 3600) * 1000,
    modelIdleMs: int(env, "REELAY_MODEL_IDLE_SECONDS", 900, 0, 86_400 * 7) * 1000,
    rateLimits: {
      requestsPerMinute: int(env, "REELAY_RATE_RPM", 600, 0),
      tokensPerMinute: int(env, "REELAY_RATE_TPM", 1_000_000, 0),
      concurrentVideoJobs: int(env, "REELAY_RATE_VIDEO_CONCURRENCY", 20, 0),
    },
    publicUrl: publicUrl(env),
    secretKey: secretKey(env),
    webhooks: {
      allowedNetworks: cidrs(env, "REELAY_WEBHOOK_ALLOW_NETWORKS"),
      timeoutMs: int(env, "REELAY_WEBHOOK_TIMEOUT_MS", 10_000, 100, 120_000),
      retryBaseMs: int(env, "REELAY_WEBHOOK_RETRY_BASE_MS", 5_000, 1, 3_600_000),
      retryMaxMs: int(env, "REELAY_WEBHOOK_RETRY_MAX_MS", 3_600_000, 1, 86_400_000),
      retryWindowMs: int(env, "REELAY_WEBHOOK_RETRY_WINDOW_SECONDS", 86_400, 1, 30 * 86_400) * 1000,
      concurrency: int(env, "REELAY_WEBHOOK_CONCURRENCY", 64, 1, 10_000),
      pollMs: int(env, "REELAY_WEBHOOK_POLL_MS", 1_000, 10, 60_000),
    },
    billing: {
      leases: bool(env, "REELAY_BILLING_LEASES", true),
      flushMs: int(env, "REELAY_BILLING_FLUSH_MS", 25, 1, 1_000),
      leaseTtlMs: int(env, "REELAY_LEASE_TTL_MS", 10_000, 1_000, 600_000),
      leaseDemandMs: int(env, "REELAY_LEASE_DEMAND_MS", 1_000, 50, 60_000),
      leaseWarmRequests: int(env, "REELAY_LEASE_WARM_REQUESTS", 3, 2, 1_000),
      leaseSharePermille: int(env, "REELAY_LEASE_MAX_SHARE_PERCENT", 50, 1, 100) * 10,
      offlineMs: int(env, "REELAY_BILLING_OFFLINE_MS", 5_000, 0, 600_000),
      reclaimWaitMs: int(env, "REELAY_BILLING_RECLAIM_MS", 500, 0, 10_000),
      journal: bool(env, "REELAY_BILLING_JOURNAL", true),
    },
    blobStore: blobStoreConfig(env),
    tracing: tracingConfig(env),
  };
}

/** REELAY_PRELOAD_MODELS: "all", "none" (the default) or a comma-separated list of model ids */
function preloadList(raw: string | null): string[] | "all" {
  if (raw === null || raw === "none") return [];
  if (raw === "all") return "all";
  return raw.split(",").map((s) => s.trim()).filter(Boolean);
}

function publicUrl(env: Env): string | null {
  const raw = str(env, "REELAY_PUBLIC_URL");
  if (!raw) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError("REELAY_PUBLIC_URL", `not a URL: "${raw}"`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new ConfigError("REELAY_PUBLIC_URL", "must be an http or https URL");
  return (u.origin + u.pathname).replace(/\/+$/, "");
}

function secretKey(env: Env): string | null {
  const raw = str(env, "REELAY_SECRET_KEY");
  if (raw && raw.length < 32) throw new ConfigError("REELAY_SECRET_KEY", "must be at least 32 characters (e.g. `openssl rand -base64 32`)");
  return raw;
}

function cidrs(env: Env, key: string): string[] {
  const raw = str(env, key);
  if (!raw) return [];
  return raw.split(",").map((s) => s.trim()).filter(Boolean).map((c) => {
    try {
      const [ip, bits] = ipaddr.parseCIDR(c.includes("/") ? c : `${c}/${c.includes(":") ? 128 : 32}`);
      return `${ip.toString()}/${bits}`;
    } catch {
      throw new ConfigError(key, `not an IP network: "${c}" (expected CIDRs such as 127.0.0.0/8,10.0.0.0/8)`);
    }
  });
}

/** `*`: any origin; a list of origins; null: no CORS headers (http/cors.ts applies it). */
export type CorsOrigins = "*" | string[] | null;

/** REELAY_CORS_ORIGINS → origins; throws a message naming the bad entry. */
export function parseCorsOrigins(raw: string | null): CorsOrigins {
  if (raw === null || raw === "*") return "*";
  if (raw.toLowerCase() === "none") return null;
  const list = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const o of list) {
    let url: URL | null = null;
    try {
      url = new URL(o);
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== o) throw new Error(`"${o}" is not an origin like https://app.example.com (scheme, host and optional port, no path)`);
  }
  return list;
}

