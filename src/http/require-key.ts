import { Elysia } from "elysia";
import type { KeyAuthenticator } from "../auth/authenticate-key.ts";
import type { RequestLog } from "../ops/hooks.ts";
import type { RequestLimit } from "../rate-limit/key-and-account-limits.ts";

/**
 * The access step of every API-key route, in one place: resolve `Authorization: Bearer <key>` to
 * `principal` (401 otherwise; with `xApiKey`, the routes of Anthropic's API, also `x-api-key: <key>`),
 * count the request against the key's and the account's requests-per-minute limits (429 with
 * Retry-After; x-ratelimit-*-requests headers on the answer), and tell the request log who asked. Runs in the transform phase: after routing, before the body
 * is validated, so an unauthenticated or over-limit request costs no validation and gets 401/429.
 */
export const requireKey = (deps: { auth: KeyAuthenticator; requestLimit: RequestLimit; requestLog: RequestLog }, opts: { xApiKey?: boolean } = {}) =>
  new Elysia().derive({ as: "scoped" }, async ({ request, set }) => {
    const principal = await deps.auth.authenticateRequest(request, opts);
    deps.requestLog.note(request, { accountId: principal.accountId, keyPrefix: principal.keyPrefix, keyId: principal.keyId });
    const headers = await deps.requestLimit.admit(principal);
    for (const name in headers) set.headers[name] = headers[name]!;
    return { principal };
  });
