/**
 * GET /admin/audit-log: every state-changing admin and console action, newest first, filtered by
 * actor, action, target and time, a page at a time (cursor `before`). Read-only: no route changes or
 * deletes an entry (the table refuses it too; src/audit/audit-log.ts).
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { badRequest } from "../../errors.ts";
import { ErrorEnvelope, PageQuery } from "../../http/schemas.ts";
import { requireOperator } from "../../http/require-operator.ts";
import { listAudit } from "../../audit/audit-log.ts";

const security = [{ admin: [] }];
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope };

const entryExample = {
  id: "42", object: "audit_log.entry", at: "2026-11-27T15:00:00.000Z",
  actor: { type: "operator", id: "op_3kT9xQ2mB7vLp0aZc1Rd", name: "Ada Lovelace" },
  action: "credits.grant", target: { type: "account", id: "acct_x1" },
  before: { balance: 0 }, after: { balance: 5000000, amount: 5000000, reason: "invoice 42", ref: null },
  request_id: "req_abc", client_ip: "203.0.113.7",
};

const Entry = t.Object(
  {
    id: t.String({ description: "increasing with time" }),
    object: t.Literal("audit_log.entry"),
    at: t.String(),
    actor: t.Object({
      type: t.String({ description: "bootstrap (REELAY_ADMIN_TOKEN), operator (a personal token), sso (a console session), cli (the reelay command on the host)" }),
      id: t.Nullable(t.String()),
      name: t.String(),
    }),
    action: t.String({ description: "account.create, account.limits, account.plan, credits.grant, credits.adjust, key.create, key.rotate, key.revoke, key.limits, budgets.set, plan.create, plan.update, plan.delete, webhook_endpoint.create/update/delete, webhook_secret.rotate, webhook_delivery.replay, job.cancel, operator.create/update/revoke, sso.sign_in, sso.sign_out" }),
    target: t.Object({ type: t.String(), id: t.Nullable(t.String()) }),
    before: t.Any({ description: "the state before (null: none); never a secret" }),
    after: t.Any({ description: "the state after (null: none); never a secret" }),
    request_id: t.Nullable(t.String()),
    client_ip: t.Nullable(t.String()),
  },
  { examples: [entryExample] },
);

const AuditPage = t.Object(
  { object: t.Literal("list"), data: t.Array(Entry), has_more: t.Boolean(), next_before: t.Nullable(t.Integer()) },
  { examples: [{ object: "list", data: [entryExample], has_more: false, next_before: null }] },
);

const time = (raw: string | undefined, param: string) => {
  if (raw === undefined || raw === "") return undefined;
  const d = new Date(/^\d+$/.test(raw) ? Number(raw) * 1000 : raw);
  if (Number.isNaN(d.getTime())) throw badRequest(`'${param}' must be an ISO 8601 time or unix seconds.`, param);
  return d;
};

export const auditLogRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/admin", tags: ["operators"] })
    .use(requireOperator(deps))
    .get("/audit-log", ({ query }) =>
      listAudit(deps.database.db, {
        actor: query.actor || undefined,
        action: query.action || undefined,
        target_type: query.target_type || undefined,
        target_id: query.target || undefined,
        from: time(query.from, "from"),
        to: time(query.to, "to"),
        limit: query.limit ?? 50,
        before: query.before,
      }), {
      query: t.Object({
        ...PageQuery.properties,
        actor: t.Optional(t.String({ maxLength: 200, description: "an operator id (or IdP subject); `bootstrap` for the bootstrap token" })),
        action: t.Optional(t.String({ maxLength: 100, description: "an action, or a prefix ending in `*` (`key.*`)" })),
        target: t.Optional(t.String({ maxLength: 200, description: "the target's id (an account, key, plan, operator …)" })),
        target_type: t.Optional(t.String({ maxLength: 100, description: "account, key, plan, webhook_endpoint, webhook_delivery, video_job, operator, sso" })),
        from: t.Optional(t.String({ maxLength: 40, description: "at or after (ISO 8601 or unix seconds)" })),
        to: t.Optional(t.String({ maxLength: 40, description: "at or before (ISO 8601 or unix seconds)" })),
      }),
      detail: {
        summary: "The audit log",
        description: "Every state-changing admin and console action, newest first: who (actor), what (action, target, the state before and after; never a secret), the request id and client address. Written in the same transaction as the change. No route changes or deletes an entry; entries older than REELAY_AUDIT_RETENTION_DAYS are pruned.",
        security,
      },
      response: { 200: AuditPage, ...errors },
    });
