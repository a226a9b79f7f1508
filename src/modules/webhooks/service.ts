/**
 * What the client routes, the admin routes and the CLI share: creating endpoints and secrets
 * (sealed before they are stored, returned once), checking URLs through the SSRF guard, and the
 * public shapes of endpoints and deliveries.
 */
import type { Tx } from "../../db/index.ts";
import { randomId } from "../../ids.ts";
import { ApiError, badRequest, notFound } from "../../errors.ts";
import { SafeFetchError } from "../../net/safe-fetch.ts";
import { checkTargetUrl, type TargetPolicy } from "../../net/safe-post.ts";
import type { DeliveryRow } from "./deliveries.ts";
import { hasAccountSecret, insertEndpoint, upsertAccountSecret, type EndpointRow } from "./endpoints.ts";
import { DEFAULT_EVENTS, MAX_ENDPOINTS_PER_ACCOUNT, type CreateEndpointBody } from "./model.ts";
import type { SecretBox } from "./secret-box.ts";
import { newSigningSecret } from "./signing.ts";

export interface WebhookKit {
  db: Tx;
  /** null: webhooks are not configured (PostgreSQL without REELAY_SECRET_KEY) */
  box(): SecretBox | null;
  policy: TargetPolicy;
}

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export function requireBox(box: SecretBox | null): SecretBox {
  if (box) return box;
  throw new ApiError(503, "service_unavailable", "Webhooks are not configured on this server: the operator must set REELAY_SECRET_KEY (it encrypts webhook signing secrets at rest).", { code: "webhooks_not_configured" });
}

/** The SSRF guard's verdict on a webhook URL, as a 400 naming `param`. */
export async function checkWebhookUrl(url: string, policy: TargetPolicy, param: string): Promise<string> {
  try {
    return (await checkTargetUrl(url, policy)).href;
  } catch (e) {
    if (!(e instanceof SafeFetchError)) throw e;
    const why = e.code === "blocked_address"
      ? `${e.message}; webhooks go to public addresses only (the operator can allow networks with REELAY_WEBHOOK_ALLOW_NETWORKS)`
      : e.message;
    throw badRequest(`'${param}' cannot receive webhooks: ${why}.`, param, "invalid_webhook_url");
  }
}

export async function createEndpoint(kit: WebhookKit, accountId: string, body: CreateEndpointBody) {
  const box = requireBox(kit.box());
  const url = await checkWebhookUrl(body.url, kit.policy, "url");
  const id = randomId("we");
  const secret = newSigningSecret();
  const row = await insertEndpoint(kit.db, { id, accountId, url, events: body.events ?? DEFAULT_EVENTS, description: body.description ?? null, secretCiphertext: box.seal(secret, id) }, MAX_ENDPOINTS_PER_ACCOUNT);
  if (!row) throw badRequest(`An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`, null, "too_many_webhook_endpoints");
  return endpointView(row, secret);
}

/** A new secret for jobs' own webhook_url (the previous one stops signing at once). */
export async function rotateAccountSecret(kit: WebhookKit, accountId: string) {
  const box = requireBox(kit.box());
  const secret = newSigningSecret();
  const createdAt = await upsertAccountSecret(kit.db, accountId, box.seal(secret, accountId));
  return { object: "webhook_secret" as const, secret, created_at: unix(createdAt) };
}

/**
 * Submit's check of `webhook_url`: the URL passes the SSRF guard and the account has a signing
 * secret (which also means this server has a REELAY_SECRET_KEY: the secret was sealed with it).
 */
export async function checkJobWebhook(db: Tx, policy: TargetPolicy, accountId: string, url: string): Promise<string> {
  const checked = await checkWebhookUrl(url, policy, "webhook_url");
  if (!(await hasAccountSecret(db, accountId))) {
    throw badRequest("'webhook_url' deliveries are signed with your account's webhook secret, and it has none yet: create it once with POST /v1/webhooks/secret.", "webhook_url", "webhook_secret_missing");
  }
  return checked;
}

export const endpointNotFound = (id: string) => notFound(`No webhook endpoint '${id}'.`, "webhook_endpoint_not_found", "id");
export const deliveryNotFound = (id: string) => notFound(`No webhook delivery '${id}'.`, "webhook_delivery_not_found", "id");

export function endpointView(e: EndpointRow, secret?: string) {
  return {
    id: e.id,
    object: "webhook_endpoint" as const,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    created_at: unix(e.createdAt),
    ...(secret ? { secret } : {}),
  };
}

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    object: "webhook_delivery" as const,
    endpoint_id: d.endpointId,
    job_id: d.jobId,
    event_type: d.eventType,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    last_status: d.lastStatus,
    last_error: d.lastError,
    next_attempt_at: d.nextAttemptAt ? unix(d.nextAttemptAt) : null,
    last_attempt_at: d.lastAttemptAt ? unix(d.lastAttemptAt) : null,
    delivered_at: d.deliveredAt ? unix(d.deliveredAt) : null,
    created_at: unix(d.createdAt),
  };
}

export function deliveryPage(page: { rows: DeliveryRow[]; hasMore: boolean }) {
  const data = page.rows.map(deliveryView);
  return { object: "list" as const, data, has_more: page.hasMore, last_id: data.at(-1)?.id ?? null };
}
