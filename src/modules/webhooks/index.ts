/**
 * Webhooks for API clients: endpoints (/v1/webhooks), the account secret for jobs' own
 * `webhook_url`, the delivery log and replays. Any key of the account with the `video` scope may
 * manage them; another account's endpoints and deliveries answer 404.
 */
import { Elysia, t } from "elysia";
import type { Config } from "../../config.ts";
import { openDatabase, type Tx } from "../../db/index.ts";
import type { AppDeps } from "../../deps.ts";
import type { BackgroundTask } from "../../background.ts";
import { forbidden } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { listDeliveries, replayDelivery } from "./deliveries.ts";
import { createDeliveryWorker } from "./delivery-worker.ts";
import { deleteEndpoint, findEndpoint, listEndpoints, updateEndpoint } from "./endpoints.ts";
import { AccountSecretView, CreateEndpointBody, DeletedView, DeliveryList, DeliveryQuery, DeliveryView, EndpointList, EndpointView, UpdateEndpointBody } from "./model.ts";
import { loadSecretBox, type SecretBox } from "./secret-box.ts";
import { createEndpoint, deliveryNotFound, deliveryPage, deliveryView, endpointNotFound, endpointView, rotateAccountSecret, type WebhookKit } from "./service.ts";

const security = [{ bearer: [] }];
const IdParams = t.Object({ id: t.String({ maxLength: 64, error: "'id' must be a webhook endpoint or delivery id." }) });
const errors = { 400: ErrorEnvelope, 404: ErrorEnvelope, 503: ErrorEnvelope, ...authErrors };

/** The secret box is opened on first use: under PGlite that may create the key file, which only a request that needs it should do. */
export function webhookKit(config: Config, db: Tx): WebhookKit {
  let box: SecretBox | null | undefined;
  return { db, box: () => (box === undefined ? (box = loadSecretBox(config)) : box), policy: { allowedNetworks: config.webhooks.allowedNetworks } };
}

const needVideoScope = (scopes: string[] | null) => {
  if (scopes && !scopes.includes("video")) throw forbidden(`Webhooks belong to video jobs: this API key lacks the 'video' scope (its scopes: ${scopes.join(", ") || "none"}).`);
};

export const webhookRoutes = (deps: AppDeps) => {
  const kit = webhookKit(deps.config, deps.database.db);
  const db = kit.db;
  const windowMs = deps.config.webhooks.retryWindowMs;
  return new Elysia({ prefix: "/v1/webhooks", tags: ["webhooks"] })
    .use(requireKey(deps))
    .onBeforeHandle({ as: "local" }, ({ principal }) => needVideoScope(principal.scopes))
    .post(
      "",
      async ({ principal, body, set }) => {
        set.status = 201;
        return createEndpoint(kit, principal.accountId, body);
      },
      {
        body: CreateEndpointBody,
        detail: {
          summary: "Register a webhook endpoint",
          description: "The answer carries its `whsec_…` signing secret, shown this once. reelay POSTs each event the endpoint subscribed to (default: completed, failed, cancelled) as JSON signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`). The body is an `EventPayload`. 2xx = delivered; 410 disables the endpoint; anything else is retried with exponential backoff for up to 24 h. The URL must resolve to a public address (checked now and at every delivery).",
          security,
        },
        response: { 201: EndpointView, ...errors },
      },
    )
    .get("", async ({ principal }) => ({ object: "list" as const, data: (await listEndpoints(db, principal.accountId)).map((e) => endpointView(e)) }), {
      detail: { summary: "List webhook endpoints", description: "The account's webhook endpoints (never their secrets)", security },
      response: { 200: EndpointList, ...authErrors },
    })
    .post("/secret", ({ principal }) => rotateAccountSecret(kit, principal.accountId), {
      detail: {
        summary: "Create the account's webhook secret",
        description: "Creates (or replaces) the account's secret for jobs' own `webhook_url`, shown this once. A job submitted with `webhook_url` gets its events at that URL, signed with this secret. Calling again replaces it: deliveries from then on are signed with the new one.",
        security,
      },
      response: { 200: AccountSecretView, ...errors },
    })
    .get("/deliveries", async ({ principal, query }) => deliveryPage(await listDeliveries(db, { accountId: principal.accountId, jobId: query.job_id, status: query.status, limit: query.limit ?? 20, after: query.after })), {
      query: DeliveryQuery,
      detail: { summary: "List webhook deliveries", description: "Every delivery of the account (endpoints and jobs' own webhook_url), newest first", security },
      response: { 200: DeliveryList, ...errors },
    })
    .post("/deliveries/:id/replay", async ({ principal, params }) => {
      const row = await replayDelivery(db, params.id, principal.accountId, windowMs);
      if (!row) throw deliveryNotFound(params.id);
      return deliveryView(row);
    }, {
      params: IdParams,
      detail: { summary: "Replay a webhook delivery", description: "Send a delivery again now (same webhook-id and body; its 24 h retry window restarts)", security },
      response: { 200: DeliveryView, ...errors },
    })
    .get("/:id", async ({ principal, params }) => {
      const row = await findEndpoint(db, params.id, principal.accountId);
      if (!row) throw endpointNotFound(params.id);
      return endpointView(row);
    }, { params: IdParams, detail: { summary: "One webhook endpoint", security }, response: { 200: EndpointView, ...errors } })
    .patch("/:id", async ({ principal, params, body }) => {
      const row = await updateEndpoint(db, params.id, principal.accountId, body);
      if (!row) throw endpointNotFound(params.id);
      return endpointView(row);
    }, {
      params: IdParams,
      body: UpdateEndpointBody,
      detail: { summary: "Update a webhook endpoint", description: "Change an endpoint's events or description, or enable it again (after a 410 disabled it)", security },
      response: { 200: EndpointView, ...errors },
    })
    .delete("/:id", async ({ principal, params }) => {
      if (!(await deleteEndpoint(db, params.id, principal.accountId))) throw endpointNotFound(params.id);
      return { id: params.id, object: "webhook_endpoint" as const, deleted: true as const };
    }, { params: IdParams, detail: { summary: "Delete a webhook endpoint", description: "Delete an endpoint with its delivery log; nothing more is sent to it", security }, response: { 200: DeletedView, ...errors } })
    .get("/:id/deliveries", async ({ principal, params, query }) => {
      if (!(await findEndpoint(db, params.id, principal.accountId))) throw endpointNotFound(params.id);
      return deliveryPage(await listDeliveries(db, { accountId: principal.accountId, endpointId: params.id, jobId: query.job_id, status: query.status, limit: query.limit ?? 20, after: query.after }));
    }, {
      params: IdParams,
      query: DeliveryQuery,
      detail: { summary: "List an endpoint's deliveries", description: "An endpoint's delivery log: status, attempts, last response code and error, newest first", security },
      response: { 200: DeliveryList, ...errors },
    });
};

/** The delivery worker (every instance runs one), started by boot. */
export function webhookBackgroundTasks(deps: AppDeps): BackgroundTask[] {
  const box = loadSecretBox(deps.config);
  if (!box) deps.logger.warn("webhooks are off: REELAY_SECRET_KEY is not set (required with PostgreSQL); the webhook routes answer 503");
  const { databaseUrl, dataDir } = deps.config;
  // 2 connections: one claim or batch of results at a time, plus the 410 transaction
  const ownPool = deps.database.kind === "postgres" && databaseUrl ? () => openDatabase({ databaseUrl, dataDir, poolSize: 2 }) : undefined;
  return [createDeliveryWorker(deps, box, { ownPool })];
}
