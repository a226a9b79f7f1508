import { index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/**
 * Responses API answers kept for `GET /v1/responses/{id}`, `previous_response_id` and
 * `item_reference` (POST /v1/responses without `store: false`). Readable only by keys of the
 * account that created them; deleted after REELAY_RESPONSES_RETENTION_SECONDS (a conversation lives
 * as long as its newest response: continuing it renews the whole chain).
 */
export const storedResponses = pgTable(
  "responses",
  {
    /** "resp_" + 24 random characters; its output items' ids carry the same 24 (modules/responses/ids.ts) */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** the key that created it */
    keyId: text("key_id"),
    model: text("model").notNull(),
    /** the response this one continued; the conversation is the chain of inputs and outputs back from here */
    previousResponseId: text("previous_response_id"),
    /** this request's own input items, with item references resolved (GET …/input_items) */
    input: jsonb("input").notNull(),
    /** the response object exactly as the client got it (GET /v1/responses/{id}) */
    response: jsonb("response").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** swept after this (and 404 before the sweep reaches it) */
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("responses_expires_idx").on(t.expiresAt)],
);
