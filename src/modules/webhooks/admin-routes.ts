/**
 * Webhooks in the admin API (REELAY_ADMIN_TOKEN): the same operations as the client routes, for any
 * account, so an operator can set up, inspect and replay deliveries on a client's behalf.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { getAccount } from "../../accounts/accounts.ts";
import { requireOperator } from "../../http/require-operator.ts";
import { audited, type AuditContext, type AuditEntry } from "../../audit/audit-log.ts";
import type { Tx } from "../../db/index.ts";
import { listDeliveries, replayDelivery } from "./deliveries.ts";
import { deleteEndpoint, findEndpoint, listEndpoints, updateEndpoint } from "./endpoints.ts";
import { webhookKit } from "./index.ts";
import { AccountSecretView, CreateEndpointBody, DeletedView, DeliveryList, DeliveryQuery, DeliveryView, EndpointList, EndpointView, UpdateEndpointBody } from "./model.ts";
import { createEndpoint, deliveryNotFound, deliveryPage, deliveryView, endpointNotFound, endpointView, rotateAccountSecret } from "./service.ts";

const security = [{ admin: [] }];
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 503: ErrorEnvelope };
const IdParams = t.Object({ id: t.String({ maxLength: 64 }) });

export const webhookAdminRoutes = (deps: AppDeps) => {
  const kit = webhookKit(deps.config, deps.database.db);
  const db = kit.db;
  const inTx = <T>(audit: AuditContext, work: (tx: Tx, record: (e: AuditEntry) => Promise<void>) => Promise<T>) => audited({ db, logger: deps.logger }, audit, work);
  return new Elysia({ prefix: "/admin", tags: ["admin"] })
    .use(requireOperator(deps))
    .post("/accounts/:id/webhooks", async ({ params, body, set, audit }) => {
      await getAccount(db, params.id);
      const made = await inTx(audit, async (tx, record) => {
        const view = await createEndpoint({ ...kit, db: tx }, params.id, body);
        await record({ action: "webhook_endpoint.create", target: { type: "webhook_endpoint", id: view.id }, after: { ...view, account_id: params.id } });
        return view;
      });
      set.status = 201;
      return made;
    }, { params: IdParams, body: CreateEndpointBody, detail: { summary: "Register an account's webhook", description: "Register a webhook endpoint for an account (its secret is in this answer only)", security }, response: { 201: EndpointView, ...errors } })
    .get("/accounts/:id/webhooks", async ({ params }) => {
      await getAccount(db, params.id);
      return { object: "list" as const, data: (await listEndpoints(db, params.id)).map((e) => endpointView(e)) };
    }, { params: IdParams, detail: { summary: "An account's webhook endpoints", security }, response: { 200: EndpointList, ...errors } })
    .post("/accounts/:id/webhook-secret", async ({ params, audit }) => {
      await getAccount(db, params.id);
      return inTx(audit, async (tx, record) => {
        const made = await rotateAccountSecret({ ...kit, db: tx }, params.id);
        await record({ action: "webhook_secret.rotate", target: { type: "account", id: params.id }, after: { created_at: made.created_at } });
        return made;
      });
    }, { params: IdParams, detail: { summary: "Create an account's webhook secret", description: "Create or replace an account's secret for jobs' own webhook_url (shown once)", security }, response: { 200: AccountSecretView, ...errors } })
    .get("/accounts/:id/webhook-deliveries", async ({ params, query }) => {
      await getAccount(db, params.id);
      return deliveryPage(await listDeliveries(db, { accountId: params.id, jobId: query.job_id, status: query.status, limit: query.limit ?? 20, after: query.after }));
    }, { params: IdParams, query: DeliveryQuery, detail: { summary: "List an account's webhook deliveries", description: "Every webhook delivery of an account, newest first", security }, response: { 200: DeliveryList, ...errors } })
    .get("/webhooks/:id", async ({ params }) => {
      const row = await findEndpoint(db, params.id, null);
      if (!row) throw endpointNotFound(params.id);
      return endpointView(row);
    }, { params: IdParams, detail: { summary: "One webhook endpoint", security }, response: { 200: EndpointView, ...errors } })
    .patch("/webhooks/:id", async ({ params, body, audit }) => {
      const row = await inTx(audit, async (tx, record) => {
        const before = await findEndpoint(tx, params.id, null);
        if (!before) throw endpointNotFound(params.id);
        const after = await updateEndpoint(tx, params.id, null, body);
        if (!after) throw endpointNotFound(params.id);
        await record({ action: "webhook_endpoint.update", target: { type: "webhook_endpoint", id: params.id }, before: endpointView(before), after: endpointView(after) });
        return after;
      });
      return endpointView(row);
    }, { params: IdParams, body: UpdateEndpointBody, detail: { summary: "Update a webhook endpoint", description: "Change a webhook endpoint, or enable it again", security }, response: { 200: EndpointView, ...errors } })
    .delete("/webhooks/:id", async ({ params, audit }) => {
      await inTx(audit, async (tx, record) => {
        const before = await findEndpoint(tx, params.id, null);
        if (!before || !(await deleteEndpoint(tx, params.id, null))) throw endpointNotFound(params.id);
        await record({ action: "webhook_endpoint.delete", target: { type: "webhook_endpoint", id: params.id }, before: endpointView(before), after: null });
      });
      return { id: params.id, object: "webhook_endpoint" as const, deleted: true as const };
    }, { params: IdParams, detail: { summary: "Delete a webhook endpoint", description: "Delete a webhook endpoint and its delivery log", security }, response: { 200: DeletedView, ...errors } })
    .get("/webhooks/:id/deliveries", async ({ params, query }) => {
      if (!(await findEndpoint(db, params.id, null))) throw endpointNotFound(params.id);
      return deliveryPage(await listDeliveries(db, { accountId: null, endpointId: params.id, jobId: query.job_id, status: query.status, limit: query.limit ?? 20, after: query.after }));
    }, { params: IdParams, query: DeliveryQuery, detail: { summary: "An endpoint's delivery log", security }, response: { 200: DeliveryList, ...errors } })
    .post("/webhook-deliveries/:id/replay", async ({ params, audit }) => {
      const row = await inTx(audit, async (tx, record) => {
        const replayed = await replayDelivery(tx, params.id, null, deps.config.webhooks.retryWindowMs);
        if (!replayed) throw deliveryNotFound(params.id);
        await record({ action: "webhook_delivery.replay", target: { type: "webhook_delivery", id: params.id }, after: { status: replayed.status } });
        return replayed;
      });
      return deliveryView(row);
    }, { params: IdParams, detail: { summary: "Replay a webhook delivery", description: "Send a webhook delivery again (same webhook-id and body)", security }, response: { 200: DeliveryView, ...errors } });
};
