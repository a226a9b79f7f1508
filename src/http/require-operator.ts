import { Elysia } from "elysia";
import type { Database } from "../db/index.ts";
import type { Config } from "../config.ts";
import { authenticateOperator, checkRole, type Actor } from "../auth/admin-token.ts";
import { ApiError } from "../errors.ts";
import type { Role } from "../operators/roles.ts";
import { csrfMatches, sessionToken, touchSession } from "../operators/sso.ts";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
import type { AuditContext } from "../audit/audit-log.ts";

type Deps = { config: Config; database: Database };

/** the caller of each /admin request, resolved once by operatorGate */
const callers = new WeakMap<Request, Promise<AuditContext>>();

async function resolveCaller(deps: Deps, ctx: { request: Request; set: { headers: Record<string, unknown> }; server: { requestIP(r: Request): { address: string } | null } | null; route?: string }): Promise<AuditContext> {
  const { request, set, server } = ctx;
  const authorization = request.headers.get("authorization");
  // a console session (cookie) only when no Authorization header is sent: a token always wins
  const cookieToken = !authorization && deps.config.oidc ? sessionToken(request.headers.get("cookie")) : null;
  let actor: Actor;
  let csrf: string | undefined;
  if (cookieToken && deps.config.oidc) {
    const session = await touchSession(deps.database.db, cookieToken, deps.config.oidc);
    if (!session) throw new ApiError(401, "authentication_error", "Your console session expired or was signed out: sign in again.", { code: "session_expired" });
    // SameSite=Lax keeps the cookie off cross-site POSTs already; the header is the second lock
    if (!SAFE_METHODS.has(request.method) && !csrfMatches(session, request.headers.get("x-csrf-token"))) {
      throw new ApiError(403, "permission_error", "Missing or wrong x-csrf-token: a console session's state-changing calls echo its CSRF token (from GET /admin/me).", { code: "csrf_failed" });
    }
    actor = { type: "sso", id: session.subject, name: session.name, role: session.role as Role };
    csrf = session.csrf;
  } else {
    actor = await authenticateOperator(deps.database.db, deps.config.adminToken, authorization);
  }
  checkRole(actor, request.method, ctx.route ?? new URL(request.url).pathname);
  const requestId = set.headers["x-request-id"];
  return { actor, requestId: typeof requestId === "string" ? requestId : null, clientIp: server?.requestIP(request)?.address ?? null, ...(csrf ? { csrf } : {}) };
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
