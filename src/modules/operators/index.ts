/**
 * Operators under /admin/operators: people with a role and a personal token (shown once, hashed at
 * rest, revocable). Only `admin` changes them (src/operators/roles.ts); GET /admin/me says who the
 * caller is, for the console.
 */
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { requireOperator } from "../../http/require-operator.ts";
import * as ops from "../../operators/operators.ts";
import { audited, type AuditContext, type AuditEntry } from "../../audit/audit-log.ts";
import type { Tx } from "../../db/index.ts";
import { CreatedOperator, CreateOperatorBody, MeView, OperatorList, OperatorView, UpdateOperatorBody } from "./model.ts";

const security = [{ admin: [] }];
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };

export const operatorRoutes = (deps: AppDeps) => {
  const db = deps.database.db;
  const inTx = <T>(audit: AuditContext, work: (tx: Tx, record: (e: AuditEntry) => Promise<void>) => Promise<T>) => audited({ db, logger: deps.logger }, audit, work);
  return new Elysia({ prefix: "/admin", tags: ["operators"] })
    .use(requireOperator(deps))
    .get("/me", ({ audit }) => ({ ...audit.actor, ...(audit.csrf ? { csrf_token: audit.csrf } : {}) }), {
      detail: { summary: "Who is calling", description: "The caller's identity and role: the bootstrap token, an operator token or a console SSO session", security },
      response: { 200: MeView, ...errors },
    })
    .post("/operators", async ({ body, set, audit }) => {
      const { token, record } = await inTx(audit, async (tx, note) => {
        const made = await ops.createOperator(tx, body);
        await note({ action: "operator.create", target: { type: "operator", id: made.record.id }, after: ops.publicOperator(made.record) });
        return made;
      });
      set.status = 201;
      return { ...ops.publicOperator(record), token };
    }, {
      body: CreateOperatorBody,
      detail: { summary: "Create an operator", description: "Create an operator with a role. The personal token is in this answer only; reelay stores its hash. Needs `admin`.", security },
      response: { 201: CreatedOperator, ...errors },
    })
    .get("/operators", async () => ({ object: "list" as const, data: (await ops.listOperators(db)).map(ops.publicOperator) }), {
      detail: { summary: "List operators", description: "Every operator, revoked ones included (never a token)", security },
      response: { 200: OperatorList, ...errors },
    })
    .patch("/operators/:id", async ({ params, body, audit }) =>
      inTx(audit, async (tx, record) => {
        const before = ops.publicOperator(await ops.getOperator(tx, params.id));
        const after = ops.publicOperator(await ops.updateOperator(tx, params.id, body));
        await record({ action: "operator.update", target: { type: "operator", id: params.id }, before: { name: before.name, role: before.role }, after: { name: after.name, role: after.role } });
        return after;
      }), {
      body: UpdateOperatorBody,
      detail: { summary: "Change an operator's role or name", description: "Takes effect on the operator's next request. Needs `admin`.", security },
      response: { 200: OperatorView, ...errors },
    })
    .post("/operators/:id/revoke", async ({ params, audit }) =>
      inTx(audit, async (tx, record) => {
        const before = await ops.getOperator(tx, params.id);
        const after = ops.publicOperator(await ops.revokeOperator(tx, params.id));
        if (!before.revokedAt) await record({ action: "operator.revoke", target: { type: "operator", id: params.id }, before: ops.publicOperator(before), after });
        return after;
      }), {
      detail: { summary: "Revoke an operator", description: "The operator's token stops working at once, on every instance (tokens are not cached). Needs `admin`.", security },
      response: { 200: OperatorView, ...errors },
    });
};
