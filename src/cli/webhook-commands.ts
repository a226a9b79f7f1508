/**
 * `reelay webhooks …`: the admin API's webhook operations from the command line (same service
 * functions, same SSRF guard, same REELAY_SECRET_KEY), printing JSON.
 */
import { parseArgs } from "node:util";
import type { Config } from "../config.ts";
import type { Db } from "../db/index.ts";
import { getAccount } from "../accounts/accounts.ts";
import { listDeliveries, replayDelivery } from "../modules/webhooks/deliveries.ts";
import { deleteEndpoint, findEndpoint, listEndpoints, updateEndpoint } from "../modules/webhooks/endpoints.ts";
import { webhookKit } from "../modules/webhooks/index.ts";
import { EVENT_TYPES, type EventType } from "../modules/webhooks/model.ts";
import { createEndpoint, deliveryNotFound, deliveryPage, deliveryView, endpointNotFound, endpointView, rotateAccountSecret } from "../modules/webhooks/service.ts";

type Command = (db: Db, args: string[], config: Config) => Promise<unknown>;

/** bad arguments: main.ts prints the message (the full usage is in `reelay help`) */
class WebhookUsageError extends Error {}

function parse(args: string[], options: Record<string, { type: "string" }>, required: string[] = []) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new WebhookUsageError((e as Error).message);
  }
  const values = parsed.values as Record<string, string | undefined>;
  for (const k of required) if (values[k] === undefined) throw new WebhookUsageError(`missing --${k}`);
  return { values, positionals: parsed.positionals };
}

function positional(args: string[], name: string): string {
  const id = parse(args, {}).positionals[0];
  if (!id) throw new WebhookUsageError(`missing ${name}`);
  return id;
}

function events(raw: string | undefined): EventType[] | undefined {
  if (raw === undefined) return undefined;
  const list = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const e of list) if (!(EVENT_TYPES as readonly string[]).includes(e)) throw new WebhookUsageError(`unknown event "${e}" (${EVENT_TYPES.join(", ")})`);
  return list as EventType[];
}


export const WEBHOOK_COMMANDS: Record<string, { usage: string; run: Command }> = {
  "webhooks create": {
    usage: "webhooks create --account ACCOUNT_ID --url URL [--events video.generation.completed,…] [--description TEXT]",
    run: async (db, args, config) => {
      const { values } = parse(args, { account: { type: "string" }, url: { type: "string" }, events: { type: "string" }, description: { type: "string" } }, ["account", "url"]);
      await getAccount(db, values.account!);
      const created = await createEndpoint(webhookKit(config, db), values.account!, { url: values.url!, events: events(values.events), description: values.description });
      return { ...created, note: "store the secret now: it is not shown again" };
    },
  },
  "webhooks list": {
    usage: "webhooks list --account ACCOUNT_ID",
    run: async (db, args) => {
      const { values } = parse(args, { account: { type: "string" } }, ["account"]);
      await getAccount(db, values.account!);
      return (await listEndpoints(db, values.account!)).map((e) => endpointView(e));
    },
  },
  "webhooks enable": {
    usage: "webhooks enable ENDPOINT_ID   (after a 410 disabled it)",
    run: async (db, args) => {
      const id = positional(args, "ENDPOINT_ID");
      const row = await updateEndpoint(db, id, null, { enabled: true });
      if (!row) throw endpointNotFound(id);
      return endpointView(row);
    },
  },
  "webhooks delete": {
    usage: "webhooks delete ENDPOINT_ID",
    run: async (db, args) => {
      const id = positional(args, "ENDPOINT_ID");
      if (!(await deleteEndpoint(db, id, null))) throw endpointNotFound(id);
      return { id, object: "webhook_endpoint", deleted: true };
    },
  },
  "webhooks deliveries": {
    usage: "webhooks deliveries (--endpoint ENDPOINT_ID | --account ACCOUNT_ID) [--job JOB_ID] [--status pending|delivered|failed] [--limit N]",
    run: async (db, args) => {
      const { values } = parse(args, { endpoint: { type: "string" }, account: { type: "string" }, job: { type: "string" }, status: { type: "string" }, limit: { type: "string" } });
      if (!values.endpoint === !values.account) throw new WebhookUsageError("give exactly one of --endpoint and --account");
      if (values.status && !["pending", "delivered", "failed"].includes(values.status)) throw new WebhookUsageError("--status must be pending, delivered or failed");
      if (values.limit && !/^\d+$/.test(values.limit)) throw new WebhookUsageError("--limit must be a positive integer");
      if (values.endpoint && !(await findEndpoint(db, values.endpoint, null))) throw endpointNotFound(values.endpoint);
      if (values.account) await getAccount(db, values.account);
      const limit = Math.min(1000, Math.max(1, Number(values.limit ?? 50)));
      return deliveryPage(await listDeliveries(db, { accountId: values.account ?? null, endpointId: values.endpoint, jobId: values.job, status: values.status, limit }));
    },
  },
  "webhooks replay": {
    usage: "webhooks replay DELIVERY_ID   (sent again by a running server, same webhook-id)",
    run: async (db, args, config) => {
      const id = positional(args, "DELIVERY_ID");
      const row = await replayDelivery(db, id, null, config.webhooks.retryWindowMs);
      if (!row) throw deliveryNotFound(id);
      return deliveryView(row);
    },
  },
  "webhooks secret": {
    usage: "webhooks secret --account ACCOUNT_ID   (create or replace the secret for jobs' own webhook_url; shown once)",
    run: async (db, args, config) => {
      const { values } = parse(args, { account: { type: "string" } }, ["account"]);
      await getAccount(db, values.account!);
      return rotateAccountSecret(webhookKit(config, db), values.account!);
    },
  },
};
