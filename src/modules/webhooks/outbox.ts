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
import { FINAL_EVENTS, type EventPayload, type EventType } from "./model.ts";

/** An event of a job, as the transition that is the event saw it. */
export interface JobEvent {
  jobId: string;
  accountId: string;
  type: EventType;
  /** the job's own webhook_url (submit field), if any */
  webhookUrl: string | null;
  /** the job as polling shows it, minus the video, plus its links */
  data: EventPayload["data"];
}

/** Queue the event for every enabled endpoint of the job's account that wants it, and for the job's own webhook_url. */
export async function enqueueJobEvent(tx: Tx, e: JobEvent, opts: { retryWindowMs: number }): Promise<number> {
  // a job's own webhook_url gets its final event only (endpoints choose theirs)
  const webhookUrl = FINAL_EVENTS.includes(e.type) ? e.webhookUrl : null;
  // no INSERT when nobody wants it: the outbox's statement trigger would wake every delivery worker for nothing
  if (!webhookUrl && !(await endpointsWant(tx, e.accountId, e.type))) return 0;
  const payload: EventPayload = { type: e.type, timestamp: new Date().toISOString(), data: e.data };
  return insertDeliveries(tx, { jobId: e.jobId, accountId: e.accountId, type: e.type, webhookUrl, payload: JSON.stringify(payload), retryWindowMs: opts.retryWindowMs });
}

async function endpointsWant(tx: Tx, accountId: string, type: EventType): Promise<boolean> {
  const rows = await query(tx, sql`SELECT 1 FROM webhook_endpoints WHERE account_id = ${accountId} AND enabled AND ${type} = ANY (events) LIMIT 1`);
  return rows.length > 0;
}

async function insertDeliveries(tx: Tx, d: { jobId: string; accountId: string; type: EventType; webhookUrl: string | null; payload: string; retryWindowMs: number; traceparent?: string | null }): Promise<number> {
  const newId = sql`'msg_' || replace(gen_random_uuid()::text, '-', '')`;
  const giveUp = sql`now() + ${d.retryWindowMs} * interval '1 millisecond'`;
  // the job's trace, when it has one (an account event's id names no job: null, unless the event brings its own, as a batch's)
  const traceparent = d.traceparent !== undefined ? sql`${d.traceparent}::text` : sql`(SELECT traceparent FROM video_jobs WHERE id = ${d.jobId})`;
  const rows = await query(tx, sql`
    INSERT INTO webhook_deliveries (id, account_id, endpoint_id, job_id, event_type, url, payload, give_up_at, traceparent)
    SELECT ${newId}, e.account_id, e.id, ${d.jobId}, ${d.type}, e.url, ${d.payload}, ${giveUp}, ${traceparent}
      FROM webhook_endpoints e WHERE e.account_id = ${d.accountId} AND e.enabled AND ${d.type} = ANY (e.events)
    UNION ALL
    SELECT ${newId}, ${d.accountId}, NULL, ${d.jobId}, ${d.type}, ${d.webhookUrl}::text, ${d.payload}, ${giveUp}, ${traceparent}
      WHERE ${d.webhookUrl}::text IS NOT NULL
    ON CONFLICT ON CONSTRAINT webhook_deliveries_event_uniq DO NOTHING
    RETURNING id`);
  return rows.length;
}

/**
 * An event of the account that is not a job's (`budget.threshold_reached`), for every enabled
 * endpoint of the account that wants it. `eventId` plays the job id's part in the unique (event,
 * endpoint) constraint: the same event queued twice is one delivery per endpoint.
 */
export async function enqueueAccountEvent(tx: Tx, e: { eventId: string; accountId: string; type: EventType; data: Record<string, unknown>; traceparent?: string | null }, opts: { retryWindowMs: number }): Promise<number> {
  if (!(await endpointsWant(tx, e.accountId, e.type))) return 0;
  const payload = JSON.stringify({ type: e.type, timestamp: new Date().toISOString(), data: e.data });
  return insertDeliveries(tx, { jobId: e.eventId, accountId: e.accountId, type: e.type, webhookUrl: null, payload, retryWindowMs: opts.retryWindowMs, traceparent: e.traceparent });
}
