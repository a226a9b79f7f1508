/**
 * The outbox write: called inside the transaction that moves a job to its final state (and, for
 * `.processing`, the one that saves the provider's handle). The delivery rows commit or roll back
 * with the transition itself, so a crash can neither lose an event (the job is final ⇒ its rows
 * exist) nor invent one (no final state ⇒ no rows). The unique (job, event, endpoint) constraint
 * makes a second copy impossible even if a transition were ever repeated.
 *
 * It runs before the money part, so it does not lengthen the time billing holds the account row
 * (completions of one account queue on that lock), and it takes no lock on that row itself:
 * webhook_deliveries has no foreign key to accounts, whose key-share lock, taken before billing's
 * FOR UPDATE in two such transactions, is how they deadlocked (40 concurrent completions did).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import { eventTypeFor as jobEventType, jobEventData } from "../videos/job-event.ts";
import { COLUMNS, toRow } from "../videos/poll.ts";
import { FINAL_EVENTS, type EventPayload, type EventType } from "./model.ts";

export interface EnqueueOptions {
  /** REELAY_PUBLIC_URL; null: the origin the job was submitted to */
  publicUrl: string | null;
  retryWindowMs: number;
}

/** The event a transition produces: cancels are failures with code `cancelled`. */
export function eventTypeFor(to: "processing" | "completed" | "failed", errorCode: string | null = null): EventType {
  return jobEventType(to, errorCode) as EventType;
}

/** Queue `type` for job `jobId` to every enabled endpoint of its account that wants it, and to the job's own webhook_url. */
export async function enqueueJobEvent(tx: Tx, jobId: string, type: EventType, opts: EnqueueOptions): Promise<number> {
  const source = await loadEventSource(tx, jobId, type);
  if (!source) return 0;
  // a job's own webhook_url gets its final event only (endpoints choose theirs)
  const webhookUrl = FINAL_EVENTS.includes(type) ? source.webhookUrl : null;
  if (!source.hasEndpoints && !webhookUrl) return 0;
  const payload = JSON.stringify(buildPayload(source.row, type, opts.publicUrl ?? source.linksBase));
  return insertDeliveries(tx, { jobId, accountId: source.accountId, type, webhookUrl, payload, retryWindowMs: opts.retryWindowMs });
}

/** The job as of this transaction, plus whether anyone wants the event (so jobs without webhooks cost one read). */
async function loadEventSource(tx: Tx, jobId: string, type: EventType) {
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT ${COLUMNS}, account_id, webhook_url, links_base,
      EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = v.account_id AND e.enabled AND ${type} = ANY (e.events)) AS has_endpoints
    FROM video_jobs v WHERE v.id = ${jobId}`);
  const r = rows[0];
  if (!r) return null;
  return {
    row: toRow(r),
    accountId: r.account_id as string,
    webhookUrl: (r.webhook_url as string | null) ?? null,
    linksBase: (r.links_base as string | null) ?? null,
    hasEndpoints: r.has_endpoints === true || r.has_endpoints === "t",
  };
}

async function insertDeliveries(tx: Tx, d: { jobId: string; accountId: string; type: EventType; webhookUrl: string | null; payload: string; retryWindowMs: number }): Promise<number> {
  const newId = sql`'msg_' || replace(gen_random_uuid()::text, '-', '')`;
  const giveUp = sql`now() + ${d.retryWindowMs} * interval '1 millisecond'`;
  const rows = await query(tx, sql`
    INSERT INTO webhook_deliveries (id, account_id, endpoint_id, job_id, event_type, url, payload, give_up_at)
    SELECT ${newId}, e.account_id, e.id, ${d.jobId}, ${d.type}, e.url, ${d.payload}, ${giveUp}
      FROM webhook_endpoints e WHERE e.account_id = ${d.accountId} AND e.enabled AND ${d.type} = ANY (e.events)
    UNION ALL
    SELECT ${newId}, ${d.accountId}, NULL, ${d.jobId}, ${d.type}, ${d.webhookUrl}::text, ${d.payload}, ${giveUp}
      WHERE ${d.webhookUrl}::text IS NOT NULL
    ON CONFLICT ON CONSTRAINT webhook_deliveries_event_uniq DO NOTHING
    RETURNING id`);
  return rows.length;
}

/** `{type, timestamp, data}`: the job as polling shows it, minus the video, plus its links. */
export function buildPayload(row: ReturnType<typeof toRow>, type: EventType, base: string | null): EventPayload {
  return { type, timestamp: new Date().toISOString(), data: jobEventData(row, base) };
}
