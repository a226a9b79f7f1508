import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";

/**
 * The access step of every API-key route, in one place: resolve `Authorization: Bearer <key>` to
 * `principal` (401 otherwise), count the request against the key's and the account's
 * requests-per-minute limits (429 with Retry-After; x-ratelimit-*-requests headers on the answer),
 * and tell the request log who asked. Runs in the transform phase: after routing, before the body
 * is validated, so an unauthenticated or over-limit request costs no validation and gets 401/429.
 */
export const requireKey = (deps: Pick<AppDeps, "auth" | "requestLimit" | "requestLog">) =>
  new Elysia().derive({ as: "scoped" }, async ({ request, set }) => {
    const principal = await deps.auth.authenticateRequest(request);
    deps.requestLog.note(request, { accountId: principal.accountId, keyPrefix: principal.keyPrefix });
    const headers = await deps.requestLimit.admit(principal);
    for (const name in headers) set.headers[name] = headers[name]!;
    return { principal };
  });
