import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";
import { annotate } from "../ops/hooks.ts";

/** Resolves `Authorization: Bearer <key>` to `principal` for every route of the module using it. */
export const requireKey = (deps: Pick<AppDeps, "auth">) =>
  new Elysia().derive({ as: "scoped" }, async ({ request }) => {
    const principal = await deps.auth.authenticateRequest(request);
    annotate(request, { accountId: principal.accountId, keyPrefix: principal.keyPrefix });
    return { principal };
  });
