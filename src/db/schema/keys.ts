import { index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/** API keys. Only a SHA-256 of the key is stored; the key itself is shown once at creation. */
export const apiKeys = pgTable(
  "api_keys",
  {
    /** "key_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** operator's label */
    name: text("name").notNull(),
    /** first characters of the key, safe to show and log (e.g. "rl-AbCd1234") */
    prefix: text("prefix").notNull(),
    /** hex SHA-256 of the full key; looked up by this, then compared in constant time */
    hash: text("hash").notNull().unique(),
    /** capabilities this key may use: chat, embeddings, video (null: all) */
    scopes: text("scopes").array(),
    /** model ids this key may use (null: all configured models) */
    allowedModels: text("allowed_models").array(),
    /** rate-limit overrides for this key (null: account override or configured default) */
    rpmLimit: integer("rpm_limit"),
    tpmLimit: integer("tpm_limit"),
    videoConcurrencyLimit: integer("video_concurrency_limit"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** updated at most once a minute per key to keep writes off the hot path */
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    /** set once; a revoked key never authenticates again */
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("api_keys_account_idx").on(t.accountId)],
);
