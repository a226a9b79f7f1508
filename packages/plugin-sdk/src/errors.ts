/**
 * Errors a plugin throws. Every bundle carries its own copy of this file, so the host can never
 * recognise them with `instanceof` (the class in a plugin's bundle is not the class in reelay's):
 * a PluginError carries a brand, a property keyed by a global symbol (`Symbol.for`), and
 * `isPluginError` / `readPluginError` check that brand. Throw them with `new PluginError(...)`; any
 * other thrown value is a plugin bug (the client gets 502 `plugin_failed`).
 *
 * What each kind means for the client, the video scheduler and billing is one table,
 * `describeFailure` in failure.ts (docs/writing-a-plugin.md prints it).
 */

/** The brand: `Symbol.for` gives the same symbol in every bundle and realm. */
export const PLUGIN_ERROR_BRAND: unique symbol = Symbol.for("reelay.plugin-error") as never;

export const PLUGIN_ERROR_KINDS = [
  "invalid_request",
  "upstream_http",
  "connect",
  "timeout",
  "malformed",
  "failed",
  "overloaded",
  "stream_interrupted",
] as const;

/**
 * - `invalid_request`: this model cannot serve the request as sent (400; `param` names the field)
 * - `upstream_http`: the upstream answered HTTP `status` (its 4xx is the client's, except 401/403,
 *   which are reelay's credentials → 502; 429 → 429; 5xx → 502)
 * - `connect`: the upstream could not be reached, or reset before answering (502)
 * - `timeout`: connect, first-byte, idle or total deadline (504)
 * - `malformed`: the upstream answered something that is not its protocol (502)
 * - `failed`: the work failed for good (a video job fails; chat / embeddings 502), `code` says why
 * - `overloaded`: at capacity right now (503 with `Retry-After: retryAfterSeconds`)
 * - `stream_interrupted`: a response that had started broke midway (a reset, an idle timeout or
 *   a truncated body after the first event): never retried, part of it may be with the client
 */
export type PluginErrorKind = (typeof PLUGIN_ERROR_KINDS)[number];

export interface PluginErrorOptions {
  /** upstream_http: the upstream's HTTP status */
  status?: number;
  /** a short machine-readable code (becomes the client's `error.code` or the failed job's code where the table says so) */
  code?: string;
  /** the request field at fault (invalid_request, upstream 4xx) */
  param?: string | null;
  /** may the same work be tried again (video scheduler; later, another deployment)? Default: see defaultRetryable */
  retryable?: boolean;
  /** overloaded: seconds the client should wait (Retry-After); default 1 */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** Retried by default: refused / reset connections, timeouts, upstream 5xx and 429, a full model. */
export function defaultRetryable(kind: PluginErrorKind, status?: number): boolean {
  if (kind === "connect" || kind === "timeout" || kind === "overloaded") return true;
  if (kind === "upstream_http") return (status ?? 0) >= 500 || status === 429;
  return false;
}

export class PluginError extends Error {
  readonly [PLUGIN_ERROR_BRAND] = true as const;
  readonly kind: PluginErrorKind;
  readonly status?: number;
  readonly code?: string;
  readonly param: string | null;
  readonly retryable: boolean;
  readonly retryAfterSeconds?: number;

  constructor(kind: PluginErrorKind, message: string, opts: PluginErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "PluginError";
    this.kind = kind;
    this.status = opts.status;
    this.code = opts.code;
    this.param = opts.param ?? null;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.retryable = opts.retryable ?? defaultRetryable(kind, opts.status);
  }
}

/** What the host reads of a branded error, each field checked (a plugin may be older or broken). */
export interface PluginErrorFields {
  kind: PluginErrorKind;
  message: string;
  status?: number;
  code?: string;
  param: string | null;
  retryable: boolean;
  retryAfterSeconds?: number;
}

/** True for an error made by any copy of this SDK (brand check, never `instanceof`). */
export function isPluginError(err: unknown): err is PluginError {
  return typeof err === "object" && err !== null && (err as Record<symbol, unknown>)[PLUGIN_ERROR_BRAND] === true;
}

/**
 * The fields of a branded error, sanitised: an unknown kind (a plugin built against a newer SDK)
 * reads as `failed`, a status outside 100–599 as none, a non-string code as none. Null when `err`
 * carries no brand.
 */
export function readPluginError(err: unknown): PluginErrorFields | null {
  if (!isPluginError(err)) return null;
  const e = err as unknown as Record<string, unknown>;
  const known = (PLUGIN_ERROR_KINDS as readonly unknown[]).includes(e.kind);
  const kind = (known ? e.kind : "failed") as PluginErrorKind;
  const status = Number.isInteger(e.status) && (e.status as number) >= 100 && (e.status as number) <= 599 ? (e.status as number) : undefined;
  const code = typeof e.code === "string" && e.code !== "" ? e.code.slice(0, 100) : known ? undefined : `unknown_error_kind:${String(e.kind).slice(0, 40)}`;
  const retryAfter = typeof e.retryAfterSeconds === "number" && Number.isFinite(e.retryAfterSeconds) && e.retryAfterSeconds > 0 ? Math.ceil(e.retryAfterSeconds) : undefined;
  return {
    kind,
    message: typeof e.message === "string" && e.message !== "" ? e.message : `the plugin failed (${kind})`,
    status,
    code,
    param: typeof e.param === "string" ? e.param : null,
    retryable: typeof e.retryable === "boolean" ? e.retryable : defaultRetryable(kind, status),
    retryAfterSeconds: retryAfter,
  };
}
