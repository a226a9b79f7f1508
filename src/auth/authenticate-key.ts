/**
 * API-key authentication. The key's SHA-256 is the lookup key (a hash of a 238-bit secret leaks
 * nothing through lookup timing); the stored hash is then compared with timingSafeEqual.
 * Positive and negative answers are cached for `cacheMs` (default 5 s), which bounds how long a
 * revocation made on another instance takes to apply; a revocation through this instance's admin
 * API evicts its cache entry at once.
 */
import { timingSafeEqual } from "node:crypto";
import type { Db } from "../db/index.ts";
import { unauthorized } from "../errors.ts";
import { findKeyByHash, hashKey, KEY_PREFIX, touchKey, type Scope } from "../accounts/api-keys.ts";

export interface Principal {
  keyId: string;
  accountId: string;
  keyPrefix: string;
  scopes: Scope[] | null;
  allowedModels: string[] | null;
  limits: { rpm: number | null; tpm: number | null; videoConcurrency: number | null };
  /** the account's own overrides (null: config default), for the per-account limit buckets */
  accountLimits?: { rpm: number | null; tpm: number | null };
  /** the price plan the account pays (null or absent: list prices; src/billing/plans.ts) */
  planId?: string | null;
}

interface CacheEntry {
  principal: Principal | null;
  expires: number;
}

const MAX_CACHE_ENTRIES = 50_000;
const TOUCH_INTERVAL_MS = 60_000;

const ADMIN_TOKEN_ON_V1 = "This is the admin token (REELAY_ADMIN_TOKEN): it works on /admin/* (and /metrics, and the console's operator view), not on /v1/*. Send an API key (rl-…) here: create one with POST /admin/accounts/{id}/keys.";

export class KeyAuthenticator {
  private cache = new Map<string, CacheEntry>();
  private touched = new Map<string, number>();

  constructor(private db: Db, private cacheMs: number, private onError: (err: unknown) => void = () => {}, private adminToken: string | null = null) {}

  /**
   * The principal of a request; requireKey asks once per request. The key is read from
   * `Authorization: Bearer <key>`, or, where `xApiKey` (Anthropic's convention: its SDK and Claude
   * Code send only that header), from `x-api-key: <key>`, which wins when both are sent.
   */
  authenticateRequest(request: Request, opts: { xApiKey?: boolean } = {}): Promise<Principal> {
    const authorization = request.headers.get("authorization");
    if (!opts.xApiKey) return this.authenticate(authorization);
    const apiKey = request.headers.get("x-api-key");
    if (apiKey !== null) return this.authenticateKey(apiKey.trim());
    if (authorization !== null) return this.authenticate(authorization);
    throw unauthorized("Missing API key: send 'x-api-key: <API key>' (or 'Authorization: Bearer <API key>').");
  }

  /** Resolve an Authorization header to a principal, or throw 401. */
  authenticate(authorization: string | null | undefined): Promise<Principal> {
    const key = parseBearer(authorization);
    if (!key) throw unauthorized(authorization ? "Invalid Authorization header: expected 'Bearer <API key>'." : "Missing API key: send 'Authorization: Bearer <API key>'.");
    return this.authenticateKey(key);
  }

  /** Resolve an API key to a principal, or throw 401. */
  async authenticateKey(key: string): Promise<Principal> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200) {
      // the first thing an operator tries after starting the server: say what it is and where it goes
      if (this.adminToken && safeEqual(key, this.adminToken)) throw unauthorized(ADMIN_TOKEN_ON_V1);
      throw unauthorized();
    }
    const hash = hashKey(key);
    const now = Date.now();
    const hit = this.cache.get(hash);
    let principal: Principal | null;
    if (hit && hit.expires > now) {
      principal = hit.principal;
    } else {
      principal = await this.load(hash);
      if (this.cacheMs > 0) {
        if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
        this.cache.set(hash, { principal, expires: now + this.cacheMs });
      }
    }
    if (!principal) throw unauthorized();
    this.touch(principal.keyId, now);
    return principal;
  }

  /** Forget cached answers for a key (after revoke/rotate/limit changes on this instance). */
  evict(keyId: string) {
    for (const [hash, entry] of this.cache) if (entry.principal?.keyId === keyId) this.cache.delete(hash);
  }

  /** Forget cached answers for every key of an account (its price plan changed on this instance). */
  evictAccount(accountId: string) {
    for (const [hash, entry] of this.cache) if (entry.principal?.accountId === accountId) this.cache.delete(hash);
  }

  private async load(hash: string): Promise<Principal | null> {
    const row = await findKeyByHash(this.db, hash);
    if (!row || row.revoked) return null;
    if (!timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(hash, "hex"))) return null;
    return {
      keyId: row.id,
      accountId: row.account_id,
      keyPrefix: row.prefix,
      scopes: row.scopes as Scope[] | null,
      allowedModels: row.allowed_models,
      limits: {
        rpm: row.rpm_limit ?? row.account_rpm_limit,
        tpm: row.tpm_limit ?? row.account_tpm_limit,
        videoConcurrency: row.video_concurrency_limit ?? row.account_video_concurrency_limit,
      },
      accountLimits: { rpm: row.account_rpm_limit, tpm: row.account_tpm_limit },
      planId: row.plan_id,
    };
  }

  /** last_used_at is written at most once a minute per key, off the request path. */
  private touch(keyId: string, now: number) {
    const last = this.touched.get(keyId) ?? 0;
    if (now - last < TOUCH_INTERVAL_MS) return;
    this.touched.set(keyId, now);
    touchKey(this.db, keyId).catch(this.onError);
  }
}

export function parseBearer(header: string | null | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/** Constant-time string comparison for the admin token. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a), bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
