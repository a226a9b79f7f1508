/**
 * CORS, so browser apps on other origins can call the API. Which origins: REELAY_CORS_ORIGINS
 * (`*` by default, a comma-separated list, or `none`).
 *
 * Why `*` by default: every route authenticates with an `Authorization: Bearer` header, never a
 * cookie, and the answers never allow credentials, so a page on another origin can do no more
 * through CORS than it could with the key in hand anyway — the same choice OpenAI's API makes.
 * Operators who want only their own front-end list its origin; `none` sends no CORS headers.
 */
import { Elysia } from "elysia";
import type { CorsOrigins } from "../config.ts";


/** Headers every answer to a cross-origin request carries; the browser hides the others from scripts. */
const EXPOSED = "x-request-id, retry-after, x-reelay-omitted-tools, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens";
const METHODS = "GET, POST, PATCH, DELETE, OPTIONS";
/** 10 minutes: Chromium's cap is 2 hours, Firefox's 24 hours; short enough for a config change to reach browsers */
const MAX_AGE_S = "600";

export const cors = (origins: CorsOrigins) =>
  new Elysia({ name: "cors" }).onRequest(({ request, set }) => {
    const origin = request.headers.get("origin");
    if (!origins || !origin) return;
    const allowed = origins === "*" ? "*" : origins.includes(origin) ? origin : null;
    if (origins !== "*") set.headers["vary"] = "Origin";
    if (!allowed) return;
    set.headers["access-control-allow-origin"] = allowed;
    const preflight = request.method === "OPTIONS" && request.headers.has("access-control-request-method");
    if (!preflight) {
      set.headers["access-control-expose-headers"] = EXPOSED;
      return;
    }
    set.headers["access-control-allow-methods"] = METHODS;
    // what the client asks for (the OpenAI SDKs send x-stainless-* headers); credentials are never allowed
    set.headers["access-control-allow-headers"] = request.headers.get("access-control-request-headers") ?? "authorization, content-type";
    set.headers["access-control-max-age"] = MAX_AGE_S;
    set.status = 204;
    return new Response(null, { status: 204 });
  });
