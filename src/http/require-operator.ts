import { Elysia } from "elysia";
import type { Database } from "../db/index.ts";
import type { Config } from "../config.ts";
import { authenticateOperator, checkRole } from "../auth/admin-token.ts";
import type { AuditContext } from "../audit/audit-log.ts";

type Deps = { config: Config; database: Database };

/** the caller of each /admin request, resolved once by operatorGate */
const callers = new WeakMap<Request, Promise<AuditContext>>();

async function resolveCaller(deps: Deps, ctx: { request: Request; set: { headers: Record<string, unknown> }; server: { requestIP(r: Request): { address: string } | null } | null; route?: string }): Promise<AuditContext> {
  const { request, set, server } = ctx;
  const actor = await authenticateOperator(deps.database.db, deps.config.adminToken, request.headers.get("authorization"));
  checkRole(actor, request.method, ctx.route ?? new URL(request.url).pathname);
  const requestId = set.headers["x-request-id"];
  return { actor, requestId: typeof requestId === "string" ? requestId : null, clientIp: server?.requestIP(request)?.address ?? null };
}

/**
 * The access step of every /admin route, in one place, for the whole app: resolve the caller to an
 * operator identity (401/403 otherwise) and check the route's rule in the role table (403
 * `insufficient_role`). Mounted in app.ts before the input guard, so a caller without the role
 * learns nothing about the route's body rules (403 before any 400).
 */
export const operatorGate = (deps: Deps) =>
  new Elysia({ name: "operator-gate" }).onTransform({ as: "global" }, async (ctx) => {
    const route = (ctx as { route?: string }).route;
    if (!route?.startsWith("/admin/") && route !== "/admin") return;
    const caller = resolveCaller(deps, ctx as never);
    callers.set(ctx.request, caller);
    await caller;
  });

/**
 * What an /admin module uses: `audit`, the caller as the audit log records it (resolved by
 * operatorGate; resolved here when the module runs without the gate, as in a test of one module).
 */
export const requireOperator = (deps: Deps) =>
  new Elysia().derive({ as: "scoped" }, async (ctx) => ({ audit: await (callers.get(ctx.request) ?? resolveCaller(deps, ctx as never)) }));
