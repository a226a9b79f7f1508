/**
 * `reelay webhooks …`: the admin API's webhook operations from the command line (same service
 * functions, same SSRF guard, same REELAY_SECRET_KEY), printing JSON.
 */
import { parseArgs } from "node:util";
import type { Config } from "../config.ts";
import type { Db } from "../db/index.ts";
import type { Logger } from "../logger.ts";
import { cliAudited } from "./cli-audit.ts";
import { getAccount } from "../accounts/accounts.ts";
import { listDeliveries, replayDelivery } from "../modules/webhooks/deliveries.ts";
import { deleteEndpoint, findEndpoint, listEndpoints, updateEndpoint } from "../modules/webhooks/endpoints.ts";
import { webhookKit } from "../modules/webhooks/index.ts";
import { EVENT_TYPES, type EventType } from "../modules/webhooks/model.ts";
import { createEndpoint, deliveryNotFound, deliveryPage, deliveryView, endpointNotFound, endpointView, rotateAccountSecret } from "../modules/webhooks/service.ts";

type Command = (db: Db, args: string[], config: Config, logger?: Logger) => Promise<unknown>;

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
    run: async (db, args, config, logger) => {
      const { values } = parse(args, { account: { type: "string" }, url: { type: "string" }, events: { type: "string" }, description: { type: "string" } }, ["account", "url"]);
      await getAccount(db, values.account!);
      const kit = webhookKit(config, db);
      const created = await cliAudited(db, logger, async (tx, record) => {
        const view = await createEndpoint({ ...kit, db: tx }, values.account!, { url: values.url!, events: events(values.events), description: values.description });
        await record({ action: "webhook_endpoint.create", target: { type: "webhook_endpoint", id: view.id }, after: { ...view, account_id: values.account! } });
        return view;
      });
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
    run: async (db, args, _config, logger) => {
      const id = positional(args, "ENDPOINT_ID");
      const row = await cliAudited(db, logger, async (tx, record) => {
        const before = await findEndpoint(tx, id, null);
        const after = before && (await updateEndpoint(tx, id, null, { enabled: true }));
        if (!before || !after) throw endpointNotFound(id);
        await record({ action: "webhook_endpoint.update", target: { type: "webhook_endpoint", id }, before: endpointView(before), after: endpointView(after) });
        return after;
      });
      return endpointView(row);
    },
  },
  "webhooks delete": {
    usage: "webhooks delete ENDPOINT_ID",
    run: async (db, args, _config, logger) => {
      const id = positional(args, "ENDPOINT_ID");
      await cliAudited(db, logger, async (tx, record) => {
        const before = await findEndpoint(tx, id, null);
        if (!before || !(await deleteEndpoint(tx, id, null))) throw endpointNotFound(id);
        await record({ action: "webhook_endpoint.delete", target: { type: "webhook_endpoint", id }, before: endpointView(before), after: null });
      });
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
    run: async (db, args, config, logger) => {
      const id = positional(args, "DELIVERY_ID");
      const row = await cliAudited(db, logger, async (tx, record) => {
        const replayed = await replayDelivery(tx, id, null, config.webhooks.retryWindowMs);
        if (!replayed) throw deliveryNotFound(id);
        await record({ action: "webhook_delivery.replay", target: { type: "webhook_delivery", id }, after: { status: replayed.status } });
        return replayed;
      });
      return deliveryView(row);
    },
  },
  "webhooks secret": {
    usage: "webhooks secret --account ACCOUNT_ID   (create or replace the secret for jobs' own webhook_url; shown once)",
    run: async (db, args, config, logger) => {
      const { values } = parse(args, { account: { type: "string" } }, ["account"]);
      await getAccount(db, values.account!);
      const kit = webhookKit(config, db);
      return cliAudited(db, logger, async (tx, record) => {
        const made = await rotateAccountSecret({ ...kit, db: tx }, values.account!);
        await record({ action: "webhook_secret.rotate", target: { type: "account", id: values.account! }, after: { created_at: made.created_at } });
        return made;
      });
    },
  },
};
