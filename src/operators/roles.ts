/**
 * Operator roles and the one table that says which role each admin route needs. Every /admin route
 * has a rule here (test/operators/route-roles.test.ts walks the app's routes and fails on a route
 * without one); a route missing from the table is refused to everyone but `admin`.
 *
 * - admin: everything (operators, SSO settings, backups, webhook endpoints and secrets)
 * - billing: accounts, credits, plans, budgets, keys
 * - support: read everything, cancel jobs, replay webhook deliveries; no money, no secrets
 * - viewer: read-only
 */
import { ApiError } from "../errors.ts";

export type Role = "admin" | "billing" | "support" | "viewer";
export const ROLES: Role[] = ["admin", "billing", "support", "viewer"];

/** What a route needs: `read` is any role; `billing` and `support` also admit `admin`. */
export type Need = "read" | "billing" | "support" | "admin";

const ADMITS: Record<Need, Role[]> = {
  read: ["admin", "billing", "support", "viewer"],
  billing: ["admin", "billing"],
  support: ["admin", "support"],
  admin: ["admin"],
};

/** "METHOD /admin/route" (the route as declared, `:id` and all) → what it needs. */
export const ROUTE_ROLES: Record<string, Need> = {
  // accounts, credits, keys, limits
  "GET /admin/accounts": "read",
  "POST /admin/accounts": "billing",
  "GET /admin/accounts/:id": "read",
  "PATCH /admin/accounts/:id/limits": "billing",
  "POST /admin/accounts/:id/credits": "billing",
  "POST /admin/accounts/:id/adjustments": "billing",
  "GET /admin/accounts/:id/ledger": "read",
  "POST /admin/accounts/:id/keys": "billing",
  "GET /admin/accounts/:id/keys": "read",
  "POST /admin/keys/:id/revoke": "billing",
  "POST /admin/keys/:id/rotate": "billing",
  "PATCH /admin/keys/:id/limits": "billing",
  "GET /admin/keys": "read",
  // budgets and plans
  "PUT /admin/accounts/:id/budgets": "billing",
  "GET /admin/accounts/:id/budgets": "read",
  "PUT /admin/keys/:id/budgets": "billing",
  "GET /admin/keys/:id/budgets": "read",
  "GET /admin/plans": "read",
  "GET /admin/plans/:id": "read",
  "PUT /admin/plans/:id": "billing",
  "DELETE /admin/plans/:id": "billing",
  "PUT /admin/accounts/:id/plan": "billing",
  // webhooks: endpoints and secrets are admin's; replaying a delivery is support's
  "POST /admin/accounts/:id/webhooks": "admin",
  "GET /admin/accounts/:id/webhooks": "read",
  "POST /admin/accounts/:id/webhook-secret": "admin",
  "GET /admin/accounts/:id/webhook-deliveries": "read",
  "GET /admin/webhooks/:id": "read",
  "PATCH /admin/webhooks/:id": "admin",
  "DELETE /admin/webhooks/:id": "admin",
  "GET /admin/webhooks/:id/deliveries": "read",
  "POST /admin/webhook-deliveries/:id/replay": "support",
  // jobs
  "GET /admin/videos": "read",
  "GET /admin/videos/:id": "read",
  "POST /admin/videos/:id/cancel": "support",
  "GET /admin/batches": "read",
  // operating figures
  "GET /admin/upstreams": "read",
  "GET /admin/usage/timeseries": "read",
  "GET /admin/stats": "read",
  "GET /admin/models": "read",
  "GET /admin/usage/accounts": "read",
  "GET /admin/usage/models": "read",
  "GET /admin/usage/top-accounts": "read",
  "GET /admin/usage/failing-upstreams": "read",
  // the whole database in a tarball: hashes, webhook secrets
  "POST /admin/backup": "admin",
  // operators, the audit log
  "GET /admin/me": "read",
  "GET /admin/operators": "read",
  "POST /admin/operators": "admin",
  "PATCH /admin/operators/:id": "admin",
  "POST /admin/operators/:id/revoke": "admin",
  "GET /admin/audit-log": "read",
};

export const needOf = (method: string, route: string): Need => ROUTE_ROLES[`${method.toUpperCase()} ${route}`] ?? "admin";

export const admits = (need: Need, role: Role) => ADMITS[need].includes(role);

/** 403 `insufficient_role`, naming the role the route needs. */
export function insufficientRole(need: Need, role: Role) {
  const needed = need === "read" ? "viewer" : need;
  const alt = need === "admin" || need === "read" ? "" : " (or admin)";
  return new ApiError(403, "permission_error", `This route needs the '${needed}' role${alt}; this operator has the '${role}' role.`, {
    code: "insufficient_role",
    details: { role_needed: needed },
  });
}
